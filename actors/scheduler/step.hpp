#pragma once
// One scheduling step of one session on the node: the commands run (execute_batch), and
// everything the step hands to the instance's L1 stream, collected in the one order the
// radix_cache actor must send it — all of it before the step's reply, so a message the
// worker sends after the reply (its begin_forward) finds all of it in the stream first:
//   1. ops      — each take_ops command's clears / COWs / snapshots, tagged with its
//                 batch (the batch is marked claimed: ids freed from now on are
//                 quarantined until it ended);
//   2. read_after — forwards of other sessions that wrote what this step reached (matched
//                 prefixes cached while they ran): the session's next begin waits for them;
//   3. donations — copies from working slots into the slots donated to the tree (no_buffer),
//                 run on the stream before anything queued after them.
// The tier work of the step (tier_pipeline::pump: demotions, loads, backups) is sent after
// these, still before the reply: a load-back runs before the forward that reads it.
//
// Thread safety: none; the caller owns the session's request_manager and the cache.

#include <cstdint>
#include <span>
#include <vector>

#include "actors/common/clock.hpp"
#include "actors/common/command.hpp"
#include "actors/radix_cache/write_fences.hpp"
#include "actors/scheduler/command_executor.hpp"
#include "actors/scheduler/forward_ops.hpp"
#include "actors/scheduler/request_manager.hpp"

namespace hc {

struct step_outcome {
  struct batch_ops {
    std::uint64_t batch = 0;
    forward_ops ops;
  };
  std::vector<batch_ops> ops;           ///< 1. non-empty ops, in command order
  std::vector<writer_mark> read_after;  ///< 2.
  forward_ops donations;                ///< 3. snapshots only
};

/// Runs `cmds` for the session of `m` (results[i] for cmds[i]) and returns what goes to
/// the stream. `hook` runs commands the caller owns (the node's prefetch).
step_outcome run_step(request_manager& m, radix_cache& cache, std::span<const command> cmds,
                      std::vector<command_result>& results, const command_hook& hook = {},
                      const clock& time = steady());

}  // namespace hc
