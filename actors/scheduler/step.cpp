#include "actors/scheduler/step.hpp"

#include <utility>

namespace hc {

step_outcome run_step(request_manager& m, radix_cache& cache, std::span<const command> cmds,
                      std::vector<command_result>& results, const command_hook& hook,
                      const clock& time) {
  step_outcome out;
  execute_batch(
      m, cache, cmds, results,
      [&](const cmd::take_ops& c, forward_ops&& ops) {
        m.stream_claimed(c.batch);
        if (!ops.empty()) out.ops.push_back({c.batch, std::move(ops)});
      },
      hook, time);
  out.read_after = m.take_read_waits();
  out.donations.snapshots = m.take_pending_snapshots();
  return out;
}

}  // namespace hc
