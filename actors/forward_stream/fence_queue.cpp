#include "actors/forward_stream/fence_queue.hpp"

#include <algorithm>
#include <string>

namespace hc {

status fence_queue::enqueue(std::uint64_t batch, forward_ops ops) {
  if (batch <= progress_.claimed)
    return {errc::invalid_argument, "ops for batch " + std::to_string(batch) +
                                        " arrived after that batch began (last begun " +
                                        std::to_string(progress_.claimed) + ")"};
  if (!ops.empty()) queue_.push_back({batch, std::move(ops)});
  return {};
}

status fence_queue::check_begin(std::uint64_t batch) const {
  if (batch <= progress_.claimed)
    return {errc::invalid_argument, "begin_forward(" + std::to_string(batch) +
                                        "): batches must increase (last begun " +
                                        std::to_string(progress_.claimed) + ")"};
  return {};
}

result<std::vector<forward_ops>> fence_queue::begin(std::uint64_t batch) {
  if (status s = check_begin(batch); !s) return s.err();
  if (auto f = progress_.in_flight())
    return error{errc::invalid_argument, "begin_forward(" + std::to_string(batch) + "): batch " +
                                             std::to_string(*f) + " is in flight"};
  auto due = std::stable_partition(queue_.begin(), queue_.end(),
                                   [batch](const tagged& t) { return t.batch <= batch; });
  std::vector<forward_ops> ops;
  ops.reserve(static_cast<std::size_t>(due - queue_.begin()));
  for (auto it = queue_.begin(); it != due; ++it)
    ops.push_back(std::move(it->ops));
  queue_.erase(queue_.begin(), due);
  progress_.claim(batch);
  return ops;
}

status fence_queue::end(std::uint64_t batch) {
  const auto f = progress_.in_flight();
  if (!f || *f != batch)
    return {errc::invalid_argument, "end_forward(" + std::to_string(batch) + "): " +
                                        (f ? "batch " + std::to_string(*f) + " is in flight"
                                           : std::string("no forward is in flight"))};
  progress_.end(batch);
  return {};
}

void slot_op_runner::run(const forward_ops& ops) {
  // Three batch calls in the documented order; a device pool runs each as few launches.
  stats_.snapshots += ops.snapshots.size();
  stats_.cows += ops.cows.size();
  if (pool_.slot_bytes() == 0) {  // bookkeeping-only instance: nothing to touch
    stats_.clears += ops.clears.size();
    return;
  }
  stats_.bad_ops += pool_.copy_slots(ops.snapshots);
  const std::size_t bad_clears = pool_.clear_slots(ops.clears);
  stats_.bad_ops += bad_clears;
  stats_.clears += ops.clears.size() - bad_clears;
  stats_.bad_ops += pool_.copy_slots(ops.cows);
}

}  // namespace hc
