#pragma once
// The ordered stream of L1 data operations of one worker session, with forward fences
// (architecture.md §1 rules 2-3): ops are queued for the forward batch that consumes them;
// begin(k) hands back every op queued for batches <= k, in queue order, and marks k in
// flight until end(k). A begin while a forward is in flight is an error: stream_rules
// holds such a begin until the end. slot_op_runner performs the ops on the slot bytes.
//
// Batches of a session are strictly increasing.
//
// Thread safety: none; confined to the forward_stream actor.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "actors/common/batch_progress.hpp"
#include "actors/common/l1_pool.hpp"
#include "actors/common/status.hpp"
#include "actors/scheduler/forward_ops.hpp"

namespace hc {

struct fence_stats {
  std::uint64_t snapshots = 0, clears = 0, cows = 0, bad_ops = 0;
};

class fence_queue {
 public:
  /// Queues ops for `batch`. Error if that batch has already begun.
  status enqueue(std::uint64_t batch, forward_ops ops);
  /// The error begin(batch) gives for an out-of-order batch.
  status check_begin(std::uint64_t batch) const;
  /// Marks `batch` in flight and returns the ops queued for batches <= batch. Error if
  /// the batch is out of order or a forward is in flight.
  result<std::vector<forward_ops>> begin(std::uint64_t batch);
  /// Ends the in-flight batch, which must be `batch`.
  status end(std::uint64_t batch);

  std::optional<std::uint64_t> in_flight() const noexcept { return progress_.in_flight(); }
  /// The last batch begun (claimed) and the last ended.
  const batch_progress& progress() const noexcept { return progress_; }
  std::size_t queued() const noexcept { return queue_.size(); }

 private:
  struct tagged {
    std::uint64_t batch;
    forward_ops ops;
  };
  std::vector<tagged> queue_;
  batch_progress progress_;
};

/// Runs clears, COWs and snapshots on the L1 slots (snapshots, then clears, then COWs of
/// one forward_ops), counting what it ran and the ops naming slots out of range. On a pool
/// without slot bytes (bookkeeping only) every op is counted and touches nothing.
class slot_op_runner {
 public:
  explicit slot_op_runner(l1_pool& pool) : pool_(pool) {}
  void run(const forward_ops& ops);
  const fence_stats& stats() const noexcept { return stats_; }

 private:
  l1_pool& pool_;
  fence_stats stats_;
};

}  // namespace hc
