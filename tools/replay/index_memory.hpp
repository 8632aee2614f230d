#pragma once
// The index's memory per cached token (issue 19): a trace replayed in process, with the heap
// in use (glibc mallinfo2: bytes handed out, chunk headers included) read around the cache's
// construction and its destruction, so that exactly what the cache owns is counted — the
// radix tree, its LRU lists and key digests, the KV / slot / row allocators and the request
// bookkeeping — and nothing of the replayer's own buffers. The instance has no pool bytes
// (bookkeeping only, as every replay), so this is the index, not the cached KV data.
// Thread safety: measures the whole process's heap; run nothing else meanwhile.

#include <cstddef>
#include <string>

#include "actors/common/status.hpp"
#include "tools/replay/trace.hpp"

namespace hc::replay {

struct index_memory {
  std::size_t ops = 0;
  std::size_t cached_tokens = 0;   ///< full tokens in the tree after the last op
  std::size_t tree_nodes = 0;      ///< non-root nodes after the last op
  std::size_t slot_nodes = 0;      ///< of those, the ones holding a device SSM slot
  std::size_t bytes_at_start = 0;  ///< owned right after construction (allocators, rows)
  std::size_t bytes_at_end = 0;    ///< owned after the last op
  std::size_t pool_tokens = 0;     ///< the KV pool's capacity in tokens

  /// (end − start) / cached tokens: what caching a token costs the index.
  double growth_per_cached_token() const noexcept;
  /// end / cached tokens: everything the index owns, per cached token.
  double total_per_cached_token() const noexcept;
};

/// Replays `t` in a fresh in-process cache and measures it (see above). invalid_config
/// where the allocator does not report its use (sanitizer builds replace malloc).
result<index_memory> measure_index_memory(const trace& t);

/// Whether heap_in_use() sees a 1 MiB allocation.
bool heap_accounting_works();

/// Heap bytes in use by this process now (mallinfo2 uordblks + hblkhd).
std::size_t heap_in_use() noexcept;

}  // namespace hc::replay
