#pragma once
// The device seam: an instance's L1 pools as the forward_stream moves their bytes — KV
// tokens (token-major, token_bytes each) and SSM states (slot_bytes each, slot 0
// reserved). The stream clears and copies slots, the workers' byte access reads and writes
// pages and slots, and the tier copies move tokens and states to and from the L2 host
// pools (host memory) through it.
//
// Implementations: byte_l1_pool below (the bytes in host memory — CPU mode; shm_l1_pool in
// gpu/ puts them in POSIX shared memory that the workers map); the CUDA pool
// (gpu/cuda_l1_pool.hpp) keeps them in device memory, runs clears and copies on its own
// stream, and makes read_* / write_* D→H / H→D copies ordered after them.
//
// Every call checks its ids: one out of range (or the reserved slot 0, or a copy onto
// itself) gives invalid_argument and changes nothing. A pool without KV or slot bytes
// (token_bytes or slot_bytes 0: a bookkeeping-only instance) refuses every byte call of
// that kind. The batch calls skip (and count) the ids a single call would refuse.
// Ordering: every call sees the effects of the calls before it, as if run one after the
// other; a worker mapping the pools sees them after synchronize() (or, in CUDA mode, after
// the stream's event for them — forward fences).
// Thread safety: none; one owner (the instance's forward_stream).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "actors/common/device_kind.hpp"
#include "actors/common/ids.hpp"
#include "actors/common/status.hpp"

namespace hc {

/// Where the pools are, for a worker that maps them and for inspect.
struct l1_pool_names {
  device_kind device = device_kind::cpu;
  std::uint32_t device_ordinal = 0;  ///< CUDA mode: the device the pools are on
  std::string kv;                    ///< CPU mode: shared-memory name ("" if no KV bytes)
  std::size_t kv_bytes = 0;
  std::string ssm;  ///< CPU mode: shared-memory name ("" if no slot bytes)
  std::size_t ssm_bytes = 0;
  /// CUDA mode: the pools' CUDA IPC memory handles (cudaIpcMemHandle_t, 64 bytes each;
  /// "" if that part has no bytes), which another process opens to map them.
  std::string kv_ipc, ssm_ipc;
};

class l1_pool {
 public:
  virtual ~l1_pool() = default;

  virtual std::size_t token_bytes() const noexcept = 0;  ///< 0: no KV bytes
  virtual std::size_t kv_tokens() const noexcept = 0;    ///< token rows
  virtual std::size_t slot_bytes() const noexcept = 0;   ///< 0: no slot bytes
  virtual std::size_t slots() const noexcept = 0;        ///< slot rows, reserved slot 0 included
  virtual l1_pool_names names() const = 0;

  virtual status clear_slot(slot_id s) = 0;
  virtual status copy_slot(slot_id src, slot_id dst) = 0;
  /// Tokens [first, first + n) to / from host memory of exactly n * token_bytes() bytes.
  virtual status read_kv(kv_index first, std::size_t n, std::span<std::byte> dst) const = 0;
  virtual status write_kv(kv_index first, std::size_t n, std::span<const std::byte> src) = 0;
  /// Slot s to / from host memory of exactly slot_bytes() bytes.
  virtual status read_slot(slot_id s, std::span<std::byte> dst) const = 0;
  virtual status write_slot(slot_id s, std::span<const std::byte> src) = 0;

  /// As read_kv / write_kv / read_slot / write_slot, but a device pool only queues the
  /// copy on its stream: the host memory must stay as it is, and is not to be read, until
  /// when_done() or synchronize() (pinned memory: pin_host). Host pools copy at once.
  virtual status queue_read_kv(kv_index first, std::size_t n, std::span<std::byte> dst) {
    return read_kv(first, n, dst);
  }
  virtual status queue_write_kv(kv_index first, std::size_t n, std::span<const std::byte> src) {
    return write_kv(first, n, src);
  }
  virtual status queue_read_slot(slot_id s, std::span<std::byte> dst) { return read_slot(s, dst); }
  virtual status queue_write_slot(slot_id s, std::span<const std::byte> src) {
    return write_slot(s, src);
  }
  /// Tokens [first, first + n) and their host memory (exactly n * token_bytes() bytes).
  struct kv_run {
    kv_index first = 0;
    std::size_t n = 0;
    std::span<std::byte> host;
  };
  /// Many runs in one call, queued as queue_read_kv / queue_write_kv would queue them one
  /// by one (a device pool submits them together: scattered pages of a tier copy cost one
  /// submission, not one each). Every run is checked first: one out of range refuses the
  /// call (invalid_argument) and nothing moves. The defaults loop over the single calls.
  virtual status queue_read_kv_runs(std::span<const kv_run> runs);
  virtual status queue_write_kv_runs(std::span<const kv_run> runs);

  /// Many clears / copies in one call, in order (a later copy reads what an earlier one
  /// wrote, as clear_slot / copy_slot one after the other would): what a forward batch's
  /// ops need, one kernel launch or so on a device. Returns how many entries were refused
  /// (skipped; the others are done). The defaults loop over the single calls.
  virtual std::size_t clear_slots(std::span<const slot_id> slots);
  virtual std::size_t copy_slots(std::span<const slot_copy> copies);
  /// Returns once every change made so far is done (a device pool waits for its stream);
  /// host pools have nothing to wait for.
  virtual status synchronize() { return {}; }
  /// Calls `done` once every change made so far is done: at once on host pools; from a
  /// CUDA runtime thread on a device pool, so `done` must only post (a message to an
  /// actor) and never call CUDA. How a tier job answers without blocking the stream.
  virtual void when_done(std::function<void()> done) { done(); }
  /// Page-locks host memory that copies to and from this pool use (the L2 host pools), so
  /// a device copies it by DMA; the region stays locked while the returned guard lives
  /// (keep the guard shorter-lived than the memory). Host pools: nothing to do (null).
  virtual result<std::shared_ptr<void>> pin_host(std::span<std::byte>) {
    return std::shared_ptr<void>();
  }

  /// Forward fences on a device, per worker session (architecture.md §1 rule 5: no
  /// GPU→CPU wait on either side). A device pool gives a session two CUDA IPC events:
  /// `ready`, recorded on the pool's stream after the ops a forward needs (record_ready),
  /// which the worker's forward waits on with cudaStreamWaitEvent; and `done`, which the
  /// worker records after its forward before it calls end, and which the pool's later
  /// work waits on (wait_done). Host pools have nothing to do (their ops are done when the
  /// call returns; a worker's forward is done when it calls end): empty handles, ok.
  struct session_events {
    std::string ready_ipc, done_ipc;  ///< cudaIpcEventHandle_t bytes (64); "" on host pools
  };
  virtual result<session_events> open_events(session_id) { return session_events{}; }
  virtual void close_events(session_id) {}
  virtual status record_ready(session_id) { return {}; }
  virtual status wait_done(session_id) { return {}; }

 protected:
  /// The range checks every implementation applies (messages name the offending ids).
  status check_slot(slot_id s) const;
  status check_copy(slot_copy c) const;
  status check_slot_buffer(std::size_t bytes) const;
  status check_kv(kv_index first, std::size_t n, std::size_t bytes) const;
  status check_kv_runs(std::span<const kv_run> runs) const;  ///< check_kv of each run
};

/// Splits `copies` into runs that can each be done all at once (in parallel) with the
/// result of doing them one after the other: within a run no copy reads or writes a slot
/// an earlier one writes, nor writes a slot an earlier one reads. Returns each run's end
/// index (the last is copies.size(); none for no copies). What a device pool launches.
std::vector<std::size_t> independent_runs(std::span<const slot_copy> copies);

/// L1 bytes in host memory the caller owns (which must outlive the pool). names() has
/// the spans' sizes.
class byte_l1_pool : public l1_pool {
 public:
  byte_l1_pool(std::span<std::byte> kv, std::size_t token_bytes, std::span<std::byte> ssm,
               std::size_t slot_bytes, l1_pool_names names = {});

  std::size_t token_bytes() const noexcept override { return token_bytes_; }
  std::size_t kv_tokens() const noexcept override {
    return token_bytes_ ? kv_.size() / token_bytes_ : 0;
  }
  std::size_t slot_bytes() const noexcept override { return slot_bytes_; }
  std::size_t slots() const noexcept override {
    return slot_bytes_ ? ssm_.size() / slot_bytes_ : 0;
  }
  l1_pool_names names() const override { return names_; }

  status clear_slot(slot_id s) override;
  status copy_slot(slot_id src, slot_id dst) override;
  status read_kv(kv_index first, std::size_t n, std::span<std::byte> dst) const override;
  status write_kv(kv_index first, std::size_t n, std::span<const std::byte> src) override;
  status read_slot(slot_id s, std::span<std::byte> dst) const override;
  status write_slot(slot_id s, std::span<const std::byte> src) override;

 private:
  std::span<std::byte> kv_;
  std::size_t token_bytes_;
  std::span<std::byte> ssm_;
  std::size_t slot_bytes_;
  l1_pool_names names_;
};

}  // namespace hc
