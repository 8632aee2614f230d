#include "actors/forward_stream/fence_queue.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace hc {

status fence_queue::enqueue(std::uint64_t batch, forward_ops ops) {
  if (last_begun_ && batch <= *last_begun_)
    return {errc::invalid_argument, "ops for batch " + std::to_string(batch) +
                                        " arrived after that batch began (last begun " +
                                        std::to_string(*last_begun_) + ")"};
  if (!ops.empty()) queue_.push_back({batch, std::move(ops)});
  return {};
}

status fence_queue::check_begin(std::uint64_t batch) const {
  if (last_begun_ && batch <= *last_begun_)
    return {errc::invalid_argument, "begin_forward(" + std::to_string(batch) +
                                        "): batches must increase (last begun " +
                                        std::to_string(*last_begun_) + ")"};
  return {};
}

result<fence_queue::begin_state> fence_queue::begin(std::uint64_t batch) {
  if (status s = check_begin(batch); !s) return s.err();
  if (waiting_)
    return error{errc::invalid_argument, "begin_forward(" + std::to_string(batch) + "): batch " +
                                             std::to_string(*waiting_) + " is already waiting"};
  if (in_flight_) {
    waiting_ = batch;
    return begin_state::waiting;
  }
  run_through(batch);
  return begin_state::ran;
}

result<std::optional<std::uint64_t>> fence_queue::end(std::uint64_t batch) {
  if (!in_flight_ || *in_flight_ != batch)
    return error{errc::invalid_argument,
                 "end_forward(" + std::to_string(batch) + "): " +
                     (in_flight_ ? "batch " + std::to_string(*in_flight_) + " is in flight"
                                 : std::string("no forward is in flight"))};
  in_flight_.reset();
  if (!waiting_) return std::optional<std::uint64_t>{};
  const std::uint64_t next = *waiting_;
  waiting_.reset();
  run_through(next);
  return std::optional<std::uint64_t>{next};
}

void fence_queue::run_now(const forward_ops& ops) {
  for (slot_copy c : ops.snapshots) {
    copy(c);
    ++stats_.snapshots;
  }
  for (slot_id s : ops.clears) {
    if (pool_.slot_bytes == 0) {  // bookkeeping-only instance: no bytes to touch
      ++stats_.clears;
      continue;
    }
    if (s <= 0 || static_cast<std::size_t>(s) >= pool_.slots()) {
      ++stats_.bad_ops;
      continue;
    }
    auto row = pool_.row(s);
    std::memset(row.data(), 0, row.size());
    ++stats_.clears;
  }
  for (slot_copy c : ops.cows) {
    copy(c);
    ++stats_.cows;
  }
}

void fence_queue::run_through(std::uint64_t batch) {
  auto due = std::stable_partition(queue_.begin(), queue_.end(),
                                   [batch](const tagged& t) { return t.batch <= batch; });
  for (auto it = queue_.begin(); it != due; ++it)
    run_now(it->ops);
  queue_.erase(queue_.begin(), due);
  in_flight_ = batch;
  last_begun_ = batch;
}

void fence_queue::copy(slot_copy c) {
  if (pool_.slot_bytes == 0) return;  // bookkeeping-only instance
  const std::size_t n = pool_.slots();
  if (c.src <= 0 || c.dst <= 0 || static_cast<std::size_t>(c.src) >= n ||
      static_cast<std::size_t>(c.dst) >= n || c.src == c.dst) {
    ++stats_.bad_ops;
    return;
  }
  auto src = pool_.row(c.src);
  std::memcpy(pool_.row(c.dst).data(), src.data(), src.size());
}

}  // namespace hc
