#pragma once
// The index plane of one cache instance: the radix tree plus every L1 id allocator it
// owns (KV tokens/pages and SSM slots), with SGLang's allocate-then-evict-then-retry
// policies (cache-semantics.md §3.1 COW, §3.7 alloc_slot_evicting, §3.8 pre-eviction,
// trace-format.md §4 alloc_kv). This is the pure logic the radix_cache actor wraps.
//
// Thread safety: none; confined to the radix_cache actor.

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "actors/common/ids.hpp"
#include "actors/common/status.hpp"
#include "actors/radix_cache/kv_allocator.hpp"
#include "actors/radix_cache/radix_tree.hpp"
#include "actors/radix_cache/slot_allocator.hpp"
#include "actors/radix_cache/write_fences.hpp"

namespace hc {

struct cache_config {
  /// Usable KV tokens in L1 (multiple of page_size). Default: 4096.
  std::size_t kv_tokens = 4096;
  /// Tokens per page. Default: 1.
  std::size_t page_size = 1;
  /// Usable SSM slots in L1 (ids 1..slots). Default: 64.
  std::size_t slots = 64;
  /// C = max(model chunk size, page_size). Default: 64.
  std::size_t chunk_size = 64;
  /// Record KV events (needs a page hasher). Default: off.
  bool enable_events = false;
  /// With enable_events: state checkpoints and restored KV too (tree_config). Default: off.
  bool state_events = false;
  /// L2 host pools (HiCache, cache-semantics.md §5). 0 host tokens = no host tier.
  std::size_t host_kv_tokens = 0;
  std::size_t host_slots = 0;
  host_tier_config host_tier{};
};

/// match() plus the copy-on-write decision of §3.1.
struct cow_match_result {
  match_result match;
  /// Slot to copy into the request's working slot before its next extend (no_slot: none).
  slot_id cow_src = no_slot;
  /// Working slot allocated for the COW (no_slot if none was needed or none was free).
  slot_id new_working_slot = no_slot;
  /// Tokens of match.indices loaded back from the host tier (their H→D copies are queued).
  std::size_t loaded_tokens = 0;
};

class radix_cache {
 public:
  /// REQUIRES: cfg.kv_tokens % cfg.page_size == 0. `hasher` must outlive the cache.
  explicit radix_cache(const cache_config& cfg, const page_hasher* hasher = nullptr);

  radix_tree& tree() noexcept { return tree_; }
  const radix_tree& tree() const noexcept { return tree_; }
  kv_allocator& kv() noexcept { return kv_; }
  const kv_allocator& kv() const noexcept { return kv_; }
  slot_allocator& slots() noexcept { return slots_; }
  const slot_allocator& slots() const noexcept { return slots_; }
  std::size_t page_size() const noexcept { return kv_.page_size(); }
  /// L2 id allocators. REQUIRES: has_host_tier().
  bool has_host_tier() const noexcept { return host_kv_ != nullptr; }
  kv_allocator& host_kv() noexcept { return *host_kv_; }
  slot_allocator& host_slots() noexcept { return *host_slots_; }
  const kv_allocator& host_kv() const noexcept { return *host_kv_; }
  const slot_allocator& host_slots() const noexcept { return *host_slots_; }

  /// The forwards of the instance's sessions that may still write (overlap scheduling).
  write_fences& fences() noexcept { return fences_; }
  const write_fences& fences() const noexcept { return fences_; }

  /// §3.1 with COW: if `cow` and the best node holds a slot, records it as the COW
  /// source and, when the request has no working slot yet, allocates one (on failure:
  /// lock best, evict one slot, retry, unlock). With a host tier, the host part of the
  /// match is loaded back first (§5.3) and the result covers it; the H→D copies wait in
  /// drain_loads().
  cow_match_result match(namespace_id ns, std::span<const token_id> key, bool cow,
                         bool has_working_slot);

  /// The H→D copies of the load-backs match() did, for the data plane. Each must be
  /// completed with load_done() once its bytes moved (its node stays locked, and its host
  /// SSM state protected, until then).
  std::vector<tier_copy> drain_loads();
  status load_done(const tier_copy& c);

  /// One slot; on failure evicts one tree slot and retries. no_slot if still short.
  slot_id alloc_slot_evicting();

  /// If fewer than `needed` slots are free, evicts (needed - free) tree slots (no KV).
  void ensure_free_slots(std::size_t needed);

  /// Extends a sequence (length seq_len, last index `last`) by n KV ids, evicting tree
  /// KV first if short (page 1: if available < n evict n; paged: if available < n + P
  /// evict n + P). Appends to out; out_of_memory if still short.
  status alloc_kv(std::size_t seq_len, kv_index last, std::size_t n, std::vector<kv_index>& out);

 private:
  /// Loads the host part of m back and extends m over it; returns the tokens loaded.
  std::size_t load_back(match_result& m);
  /// Cuts m back to the deepest node with a device state (the prefix a request can resume).
  void resumable_prefix(match_result& m);

  kv_allocator kv_;
  slot_allocator slots_;
  std::unique_ptr<kv_allocator> host_kv_;
  std::unique_ptr<slot_allocator> host_slots_;
  radix_tree tree_;
  std::vector<tier_copy> loads_;
  write_fences fences_;
};

}  // namespace hc
