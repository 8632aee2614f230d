#pragma once
// Which prefix of pages an L3 lookup can restore when a request needs several pools (KV
// plus sidecars such as the SSM state): SGLang's v2 multi-pool existence semantics
// (reference/integration.md §1.4, spec §5.4). Pure.
//
//  * kv_pages = the longest contiguous run of present KV pages from page 0;
//  * ALL_PAGES pool: every page in [0, p) must be present;
//  * TRAILING_PAGES(N) pool: pages p-N .. p-1 must be present (an SSM state, N = 1, only
//    exists at the node boundaries where it was stored);
//  * a length p (in pages, 1 <= p <= kv_pages) is restorable when every pool allows it;
//    with kv_pages == 0 nothing is restorable and the pools are not consulted.

#include <cstddef>
#include <span>
#include <vector>

namespace hc {

enum class hit_policy { all_pages, trailing_pages };

struct pool_presence {
  hit_policy policy = hit_policy::all_pages;
  std::size_t trailing_n = 1;  ///< N of TRAILING_PAGES (>= 1)
  /// present[i]: the pool has page i. Shorter than the KV list = missing beyond its end.
  std::vector<bool> present;
};

/// Longest contiguous present prefix.
std::size_t leading_pages(const std::vector<bool>& present);

/// Every restorable prefix length in pages, ascending (sparse for trailing pools). Ranks of
/// one tensor-parallel group intersect these sets (not the minimum of their maxima).
std::vector<std::size_t> restorable_prefix_pages(const std::vector<bool>& kv_present,
                                                 std::span<const pool_presence> pools);

/// The deepest restorable length (0 if none): what a prefetch may load.
std::size_t usable_pages(const std::vector<bool>& kv_present, std::span<const pool_presence> pools);

}  // namespace hc
