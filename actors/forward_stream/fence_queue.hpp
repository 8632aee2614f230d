#pragma once
// The ordered stream of L1 data operations of one worker session, with forward fences
// (architecture.md §1 rules 2-3). Ops are queued for the forward batch that consumes
// them; begin(k) runs every op queued for batches <= k, but only once the previous
// forward (begun and not yet ended) has ended — so a recycled slot is never cleared or
// overwritten while an in-flight forward may still write it.
//
// Batches of a session are strictly increasing. At most one begin may wait.
//
// Thread safety: none; confined to the forward_stream actor.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "actors/common/status.hpp"
#include "actors/scheduler/forward_ops.hpp"

namespace hc {

/// The SSM slot bytes the ops act on (slot_bytes 0: a bookkeeping-only instance whose
/// ops are counted but touch nothing): row s is bytes [s * slot_bytes, (s+1) * slot_bytes).
struct slot_pool_view {
  std::span<std::byte> bytes;
  std::size_t slot_bytes = 0;
  std::size_t slots() const noexcept { return slot_bytes ? bytes.size() / slot_bytes : 0; }
  std::span<std::byte> row(slot_id s) const noexcept {
    return bytes.subspan(static_cast<std::size_t>(s) * slot_bytes, slot_bytes);
  }
};

struct fence_stats {
  std::uint64_t snapshots = 0, clears = 0, cows = 0, bad_ops = 0;
};

class fence_queue {
 public:
  explicit fence_queue(slot_pool_view pool) : pool_(pool) {}

  /// Queues ops for `batch`. Error if that batch has already begun.
  status enqueue(std::uint64_t batch, forward_ops ops);

  enum class begin_state { ran, waiting };
  /// Runs the ops of batches <= batch if no forward is in flight (ran); otherwise the
  /// begin waits for end() of the in-flight batch (waiting).
  result<begin_state> begin(std::uint64_t batch);
  /// Ends the in-flight batch. If a begin was waiting, it runs now and its batch is
  /// returned so the caller can answer it.
  result<std::optional<std::uint64_t>> end(std::uint64_t batch);

  /// The error begin(batch) would give for an out-of-order batch (checked before waiting).
  status check_begin(std::uint64_t batch) const;
  /// Runs `ops` at once (the caller knows nothing in flight may touch their slots).
  void run_now(const forward_ops& ops);

  std::optional<std::uint64_t> in_flight() const noexcept { return in_flight_; }
  std::size_t queued() const noexcept { return queue_.size(); }
  const fence_stats& stats() const noexcept { return stats_; }

 private:
  struct tagged {
    std::uint64_t batch;
    forward_ops ops;
  };
  void run_through(std::uint64_t batch);
  void copy(slot_copy c);

  slot_pool_view pool_;
  std::vector<tagged> queue_;
  std::optional<std::uint64_t> in_flight_;
  std::optional<std::uint64_t> waiting_;
  std::optional<std::uint64_t> last_begun_;
  fence_stats stats_;
};

}  // namespace hc
