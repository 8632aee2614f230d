#pragma once
// L1 full-attention KV allocator, token-granular (page_size 1) or paged, with SGLang's
// exact reuse order (spec/trace-format.md §3; cache-semantics.md §10.1):
//
//  * page_size 1 (TokenToKVPoolAllocator): free list [1..N]; alloc(n) takes the first n
//    or nothing; free(x) appends x in the given order (FIFO reuse).
//  * page_size P > 1 (PagedTokenToKVPoolAllocator): free list of page ids [1..N/P];
//    token id = page * P + offset; an extend of a sequence of current length s by n
//    tokens fills the rest of the page holding token s-1 first, then takes
//    ceil((s+n)/P) - ceil(s/P) pages from the front; free(x) prepends the sorted unique
//    page ids of x. available() = free pages * P.
//
// Allocation is all-or-nothing. Freeing an id that is already free is reported as
// errc::double_free and changes nothing (SGLang does not check; we never corrupt the list).
//
// Thread safety: none; confined to the radix_cache actor.

#include <cstddef>
#include <span>
#include <vector>

#include "actors/common/ids.hpp"
#include "actors/common/status.hpp"
#include "actors/radix_cache/run_ring.hpp"
#include "actors/radix_cache/unit_bitset.hpp"

namespace hc {

class kv_allocator {
 public:
  /// A pool of `tokens` usable token slots (ids 1..tokens for page 1; pages 1..tokens/P).
  /// REQUIRES: page_size >= 1 and tokens % page_size == 0.
  kv_allocator(std::size_t tokens, std::size_t page_size);

  std::size_t page_size() const noexcept { return page_size_; }
  /// Usable tokens in the pool (excluding the dummy page).
  std::size_t capacity() const noexcept { return capacity_; }
  /// Tokens available for allocation (pages * page_size when paged).
  std::size_t available() const noexcept { return free_.size() * page_size_; }

  /// page_size 1 only: n fresh token ids, or nullopt-equivalent (false) if fewer are free.
  /// Appends to out. REQUIRES: page_size() == 1.
  bool alloc(std::size_t n, std::vector<kv_index>& out);

  /// Extends a sequence of current length `seq_len` (its last token id `last_index`,
  /// ignored when seq_len % P == 0) by n tokens. Works for any page size. Appends the
  /// n new ids to out, growing its capacity geometrically (a row extended by one token
  /// per decode step is copied O(log length) times, not at every step); returns false
  /// (and changes nothing) if pages are short.
  bool alloc_extend(std::size_t seq_len, kv_index last_index, std::size_t n,
                    std::vector<kv_index>& out);

  /// Pages (page_size 1: tokens) an extend would take from the free list.
  std::size_t pages_needed(std::size_t seq_len, std::size_t n) const noexcept;

  /// Returns ids to the pool (see the header comment for the order).
  status free(std::span<const kv_index> ids);

  /// True if `ids` are whole units of this pool: page size 1, one run of consecutive ids;
  /// page size P, whole pages in order (each aligned group of P ids is some page q's ids
  /// qP, qP + 1, ..., qP + P - 1). A tree node checks its ids once, while they are hot, and
  /// keeps whole units as runs (node_kv). Reads every id.
  bool is_whole_units(std::span<const kv_index> ids) const noexcept;
  /// The length of the runs whole units of n ids are kept as: n at page size 1 (one run),
  /// the page size otherwise (a run per page).
  std::size_t unit_run_length(std::size_t n) const noexcept {
    return page_size_ == 1 ? n : page_size_;
  }
  /// free() of the ids of runs: run r is run_len consecutive ids from firsts[r]. Reads one
  /// id per run. Same result, errors and order as free() of those ids.
  status free_runs(std::span<const kv_index> firsts, std::size_t run_len);
  /// free() of the ids of these runs, in order (a tree node's encoded ids). Reads one entry
  /// per run. Same result, errors and order as free() of those ids.
  status free_id_runs(std::span<const id_run> runs);

  /// Resets to the initial free list.
  void clear();

  /// True iff `id` is currently free (O(1)). For invariant checks.
  bool is_free(kv_index id) const noexcept;

 private:
  std::size_t page_size_;
  /// log2(page_size_) when it is a power of two (every real page size), else -1: the page
  /// of a token id is then a shift, not a division (free() maps every id it returns).
  int page_shift_;
  std::size_t capacity_;
  /// free() at page 1: the ids' runs checked and marked, then appended.
  status free_tokens(std::span<const kv_index> ids);
  /// Adds the pages of the run first..first + n - 1 to scratch_ (ascending, no repeat of
  /// the last one).
  void add_pages_of_run(kv_index first, std::size_t n);
  /// Paged free of the pages in scratch_: sorted, deduplicated, checked, prepended.
  status free_pages();

  run_ring free_;        // token ids (P=1) or page ids (P>1), as runs
  unit_bitset is_free_;  // per token (P=1) or per page (P>1), unit 0 unused
  std::vector<std::int32_t> scratch_;
  std::vector<id_run> runs_;  // free_tokens(): the runs it marked
};

}  // namespace hc
