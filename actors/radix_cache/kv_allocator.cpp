#include "actors/radix_cache/kv_allocator.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdint>
#include <functional>
#include <string>

#include "actors/radix_cache/id_runs.hpp"

namespace hc {

kv_allocator::kv_allocator(std::size_t tokens, std::size_t page_size)
    : page_size_(page_size == 0 ? 1 : page_size),
      page_shift_(std::has_single_bit(page_size_) ? std::countr_zero(page_size_) : -1),
      capacity_(tokens) {
  assert(tokens % page_size_ == 0);
  clear();
}

namespace {

/// f(first id, length) for each run of consecutive ids in `ids`, in order; stops when f
/// returns false and returns how many ids the completed runs covered.
template <class F>
std::size_t for_each_run(std::span<const kv_index> ids, F&& f) {
  std::size_t i = 0;
  while (i < ids.size()) {
    const std::size_t n = leading_run_length(ids.subspan(i));
    if (!f(ids[i], n)) break;
    i += n;
  }
  return i;
}

}  // namespace

void kv_allocator::clear() {
  const std::size_t units = capacity_ / page_size_;
  free_.reset_capacity(units);
  free_.push_back_run(1, units);
  is_free_.assign(units + 1);
  is_free_.set(1, units);
}

bool kv_allocator::alloc(std::size_t n, std::vector<kv_index>& out) {
  assert(page_size_ == 1);
  if (n > free_.size()) return false;
  free_.pop_front_into(n, out, [this](kv_index first, std::size_t k) {
    is_free_.reset(static_cast<std::size_t>(first), k);
  });
  return true;
}

std::size_t kv_allocator::pages_needed(std::size_t seq_len, std::size_t n) const noexcept {
  // ceil((seq_len + n) / P) - ceil(seq_len / P), without forming seq_len + n: a count near
  // 2^64 wrapped to a few pages, and the extend then reserved n ids (std::length_error).
  const std::size_t p = page_size_;
  const std::size_t room = (p - seq_len % p) % p;  // left in the partly used last page
  if (n <= room) return 0;
  const std::size_t rest = n - room;
  return rest / p + (rest % p != 0 ? 1 : 0);
}

bool kv_allocator::alloc_extend(std::size_t seq_len, kv_index last_index, std::size_t n,
                                std::vector<kv_index>& out) {
  if (page_size_ == 1) return alloc(n, out);
  const std::size_t p = page_size_;
  const std::size_t pages = pages_needed(seq_len, n);
  if (pages > free_.size()) return false;
  // Room for n more, growing geometrically as push_back would: `out` is a request's row,
  // which every decode step extends by one token, and an exact reserve(size + n) copies
  // the whole row at each step — a generation's cost quadratic in its length.
  if (out.capacity() - out.size() < n) out.reserve(std::max(out.size() + n, 2 * out.capacity()));
  std::size_t left = n;
  // 1. Fill the rest of the partially used last page.
  if (seq_len % p != 0) {
    const std::size_t room = p - seq_len % p;
    const std::size_t take = std::min(room, left);
    for (std::size_t i = 1; i <= take; ++i)
      out.push_back(last_index + static_cast<kv_index>(i));
    left -= take;
  }
  // 2. Whole new pages from the front of the free list, filled in order.
  for (std::size_t k = 0; k < pages; ++k) {
    const std::int32_t page = free_.pop_front();
    is_free_.reset(static_cast<std::size_t>(page));
    const std::size_t take = std::min(p, left);
    const kv_index base = static_cast<kv_index>(page * static_cast<std::int64_t>(p));
    for (std::size_t i = 0; i < take; ++i)
      out.push_back(base + static_cast<kv_index>(i));
    left -= take;
  }
  assert(left == 0);
  return true;
}

status kv_allocator::free(std::span<const kv_index> ids) {
  if (ids.empty()) return {};
  if (page_size_ == 1) return free_tokens(ids);
  // Paged: sorted unique page ids, prepended (torch.unique(x // P) then cat((pages, free))).
  // Run by run: a leaf costs a step per page, not per id.
  scratch_.clear();
  for_each_run(ids, [this](kv_index first, std::size_t k) {
    add_pages_of_run(first, k);
    return true;
  });
  return free_pages();
}

bool kv_allocator::is_whole_units(std::span<const kv_index> ids) const noexcept {
  const std::size_t p = page_size_;
  if (p == 1) return is_one_run(ids);
  if (ids.size() % p != 0) return false;
  if (page_shift_ >= 0) return is_whole_pages(ids, p);
  for (std::size_t at = 0; at < ids.size(); at += p) {
    const kv_index first = ids[at];
    if (first < 0 || static_cast<std::size_t>(first) % p != 0 || !is_one_run(ids.subspan(at, p)))
      return false;
  }
  return true;
}

status kv_allocator::free_runs(std::span<const kv_index> firsts, std::size_t run_len) {
  if (firsts.empty() || run_len == 0) return {};
  if (page_size_ == 1) {
    const auto len = static_cast<std::uint32_t>(run_len);
    if (firsts.size() == 1) {  // a page-1 node's one run: no list to build
      const id_run one{firsts[0], len};
      return free_id_runs({&one, 1});
    }
    std::vector<id_run> runs;
    runs.reserve(firsts.size());
    for (const kv_index first : firsts)
      runs.push_back({first, len});
    return free_id_runs(runs);
  }
  // The pages of each run in turn: the list free() builds from the runs of the ids.
  scratch_.clear();
  for (const kv_index first : firsts)
    add_pages_of_run(first, run_len);
  return free_pages();
}

status kv_allocator::free_id_runs(std::span<const id_run> runs) {
  const auto ids_of = [runs] {
    std::vector<kv_index> ids;
    for (const id_run& r : runs)
      for (std::uint32_t i = 0; i < r.length; ++i)
        ids.push_back(static_cast<kv_index>(static_cast<std::uint32_t>(r.first) + i));
    return ids;
  };
  if (page_size_ != 1) return free(ids_of());
  // Every run in range and held (checked with this call's marks standing, so an id twice
  // shows as free): mark them all, then push them in order — the sequence free() pushes.
  const std::size_t units = capacity_;
  std::size_t marked = 0;
  for (; marked < runs.size(); ++marked) {
    const id_run& r = runs[marked];
    const auto last = static_cast<std::int64_t>(r.first) + static_cast<std::int64_t>(r.length) - 1;
    if (r.length == 0 || r.first <= 0 || static_cast<std::uint64_t>(last) > units ||
        is_free_.any(static_cast<std::size_t>(r.first), r.length))
      break;
    is_free_.set(static_cast<std::size_t>(r.first), r.length);
  }
  if (marked == runs.size()) {
    for (const id_run& r : runs)
      free_.push_back_run(r.first, r.length);
    return {};
  }
  // A bad run: the marks taken back, the ids one by one give the exact error (and change
  // nothing).
  for (std::size_t i = 0; i < marked; ++i)
    is_free_.reset(static_cast<std::size_t>(runs[i].first), runs[i].length);
  return free_tokens(ids_of());
}

status kv_allocator::free_tokens(std::span<const kv_index> ids) {
  const std::size_t units = capacity_ / page_size_;
  // Run by run (a leaf's ids are mostly one run): check and mark a word of marks at a
  // time; on the first bad id, unmark what this call marked (an id freed twice — already
  // free, or twice in `ids` — or out of range changes nothing).
  const auto in_range = [units](kv_index id) {
    return id > 0 && static_cast<std::size_t>(id) <= units;
  };
  runs_.clear();
  const std::size_t marked = for_each_run(ids, [&](kv_index first, std::size_t k) {
    if (!in_range(first) || static_cast<std::size_t>(first) + k - 1 > units ||
        is_free_.any(static_cast<std::size_t>(first), k))
      return false;
    is_free_.set(static_cast<std::size_t>(first), k);
    runs_.push_back({first, static_cast<std::uint32_t>(k)});
    return true;
  });
  if (marked == ids.size()) {
    for (const id_run& r : runs_)
      free_.push_back_run(r.first, r.length);
    return {};
  }
  // The bad id is in the run that stopped (found while this call's marks still stand: an
  // id twice in `ids` shows as free), then the marks are taken back.
  status bad{errc::invariant_violated, "kv free: a run failed without a bad id"};
  for (std::size_t i = marked; i < ids.size(); ++i) {
    const kv_index id = ids[i];
    if (!in_range(id)) {
      bad = {errc::invalid_argument, "kv index " + std::to_string(id) + " out of range"};
      break;
    }
    if (is_free_.test(static_cast<std::size_t>(id))) {
      bad = {errc::double_free, "kv index " + std::to_string(id) + " freed twice"};
      break;
    }
  }
  for (const id_run& r : runs_)
    is_free_.reset(static_cast<std::size_t>(r.first), r.length);
  return bad;
}

void kv_allocator::add_pages_of_run(kv_index first, std::size_t k) {
  // The page of an id is id / P (rounded toward zero, like the division for a negative id:
  // both are out of range). The pages of a run of consecutive ids are every page from its
  // first id's to its last id's (page_of is monotone and leaves no page out).
  const auto page_of = [this](kv_index id) -> std::int32_t {
    if (page_shift_ >= 0 && id >= 0) return id >> page_shift_;
    return id / static_cast<kv_index>(page_size_);
  };
  const auto add = [this](std::int32_t page) {
    if (scratch_.empty() || scratch_.back() != page) scratch_.push_back(page);
  };
  const auto last =
      static_cast<kv_index>(static_cast<std::int64_t>(first) + static_cast<std::int64_t>(k) - 1);
  if (last < first) {  // a run through the top of the id range: garbage, id by id
    for (std::size_t i = 0; i < k; ++i)
      add(page_of(static_cast<kv_index>(static_cast<std::uint32_t>(first) + i)));
    return;
  }
  for (std::int32_t page = page_of(first), to = page_of(last);; ++page) {
    add(page);
    if (page >= to) break;
  }
}

status kv_allocator::free_pages() {
  const std::size_t units = capacity_ / page_size_;
  // One run's pages come ascending and unique: sorted already (a leaf's ids are mostly
  // one run, or runs in increasing pages).
  if (std::adjacent_find(scratch_.begin(), scratch_.end(), std::greater_equal<>()) !=
      scratch_.end()) {
    std::sort(scratch_.begin(), scratch_.end());
    scratch_.erase(std::unique(scratch_.begin(), scratch_.end()), scratch_.end());
  }
  for (std::int32_t page : scratch_) {
    if (page <= 0 || static_cast<std::size_t>(page) > units)
      return {errc::invalid_argument, "kv page " + std::to_string(page) + " out of range"};
    if (is_free_.test(static_cast<std::size_t>(page)))
      return {errc::double_free, "kv page " + std::to_string(page) + " freed twice"};
  }
  // Prepended a run of consecutive pages at a time, the last run first.
  std::size_t end = scratch_.size();
  while (end > 0) {
    std::size_t begin = end - 1;
    while (begin > 0 && scratch_[begin - 1] + 1 == scratch_[begin])
      --begin;
    const std::size_t n = end - begin;
    is_free_.set(static_cast<std::size_t>(scratch_[begin]), n);
    free_.push_front_run(scratch_[begin], n);
    end = begin;
  }
  return {};
}

bool kv_allocator::is_free(kv_index id) const noexcept {
  const std::size_t unit = static_cast<std::size_t>(id) / page_size_;
  return unit < is_free_.size() && is_free_.test(unit);
}

}  // namespace hc
