#pragma once
// L2 bytes (cache-semantics.md §5.1, architecture.md §4): the host KV pool and the host
// SSM pool of one instance. Page-first layout: a token's KV for every
// full-attention layer is contiguous, and so is a page of tokens, so one page is one L3
// value and one memcpy. Ids are the radix_cache's host ids (KV: token ids as handed out
// by a kv_allocator, page 0 unused; SSM: slot ids 1..N, stored at index id-1 — SGLang's
// host slots start at 0).
//
// Sizing follows §5.1: from a byte budget or as a ratio of the device pool (default 2.0),
// the SSM pool +1, both larger than the device's, refused when host memory is short. The
// SSM pool may be given its own bytes (SGLang's proposed --hicache-mamba-size-gb,
// sglang#39436): a hybrid's host tier needs checkpoint slots in proportion to the
// sequences it keeps resumable, not to the device's small SSM pool.
//
// Sharing contract. The node creates one host_pools per instance with a host tier and
// shares it (shared_ptr) between the instance's forward_stream actor (D→H backups and
// demotions, H→D load-backs) and the host_storage actor's I/O thread (L2→L3 writes,
// L3→L2 prefetch reads). The ids themselves belong to the radix_cache actor, which hands
// each job only ids it reserved or protected for that job until the job's reply: a backup
// writes host ids reserved for it, a load reads host ids locked by the load, an L3 write
// reads ids host-protected until its ack, a prefetch writes the ids of its ticket. Two
// jobs in flight never share an id that one of them writes (reads may overlap), distinct
// ids are disjoint bytes, and the pools are never resized after construction — so no
// lock is needed. Nothing else is thread-safe:
// construction and destruction happen on one thread, with no job in flight.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "actors/common/ids.hpp"
#include "actors/common/instance_spec.hpp"
#include "actors/common/status.hpp"

namespace hc {

struct host_pool_request {
  std::size_t device_kv_tokens = 0;
  std::size_t device_slots = 0;
  std::size_t page_size = 1;
  std::size_t kv_bytes_per_token = 0;  ///< all full-attention layers, K and V
  std::size_t state_bytes = 0;         ///< one SSM slot, all SSM layers
  /// Host bytes for the two pools together; 0 = use `ratio`.
  std::uint64_t host_bytes = 0;
  /// Host pool size as a multiple of the device pool when host_bytes is 0. Default 2.0.
  double ratio = 2.0;
  /// Host bytes of the SSM pool alone; 0 = by host_bytes' split or the ratio. Given, the
  /// SSM pool holds ssm_bytes / state_bytes slots (+1) and the KV pool the rest of
  /// host_bytes, or ratio x the device KV pool when host_bytes is 0.
  std::uint64_t ssm_bytes = 0;
  /// Host memory that may be used (MemAvailable minus a reserve); 0 = do not check.
  std::uint64_t host_ram_available = 0;
};

struct host_pool_sizes {
  std::size_t kv_tokens = 0;  ///< multiple of page_size
  std::size_t slots = 0;
  std::uint64_t bytes() const noexcept;
  std::size_t kv_bytes_per_token = 0;
  std::size_t state_bytes = 0;
};

/// §5.1 sizing. invalid_config (naming the option) when the host pools would not be larger
/// than the device pools or do not fit in the available host memory.
result<host_pool_sizes> size_host_pools(const host_pool_request& req);

/// The sizing request of an instance's host tier (spec.host_tier()), host memory unchecked.
host_pool_request host_pool_request_of(const instance_spec& spec);

/// Zeroed bytes for one pool and what keeps them alive.
struct host_bytes {
  std::shared_ptr<std::byte> owner;
  std::span<std::byte> bytes;
};
/// Where the pools' bytes come from; throws std::bad_alloc when the memory is not there.
using host_bytes_source = host_bytes (*)(std::size_t n);
/// operator new, value-initialised: every page is touched as it is zeroed (fine for the
/// small pools of tests; the node maps large pools populated by the kernel instead,
/// gpu/anonymous_memory.hpp, which on a VM is ~50x faster).
host_bytes heap_host_bytes(std::size_t n);

class host_pools {
 public:
  host_pools(const host_pool_sizes& sizes, std::size_t page_size,
             host_bytes_source source = heap_host_bytes);

  /// Bytes of `tokens` consecutive token ids starting at `first` (a page: first = page*P).
  std::span<std::byte> kv(kv_index first, std::size_t tokens = 1);
  std::span<std::byte> state(slot_id s);
  std::size_t kv_bytes_per_token() const noexcept { return token_bytes_; }
  std::size_t state_bytes() const noexcept { return state_bytes_; }
  std::size_t page_size() const noexcept { return page_size_; }
  /// Token ids 0..kv_tokens()-1 (page 0 unused) and slot ids 1..slots() are addressable.
  std::size_t kv_tokens() const noexcept { return tokens_; }
  std::size_t slots() const noexcept { return slots_; }
  /// The whole KV and state regions (to page-lock them for device copies).
  std::span<std::byte> kv_region() noexcept { return kv_.bytes; }
  std::span<std::byte> state_region() noexcept { return states_.bytes; }

 private:
  std::size_t page_size_;
  std::size_t token_bytes_;
  std::size_t state_bytes_;
  std::size_t tokens_;
  std::size_t slots_;
  host_bytes kv_;
  host_bytes states_;
};

}  // namespace hc
