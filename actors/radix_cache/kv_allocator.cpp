#include "actors/radix_cache/kv_allocator.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <string>

namespace hc {

kv_allocator::kv_allocator(std::size_t tokens, std::size_t page_size)
    : page_size_(page_size == 0 ? 1 : page_size),
      page_shift_(std::has_single_bit(page_size_) ? std::countr_zero(page_size_) : -1),
      capacity_(tokens) {
  assert(tokens % page_size_ == 0);
  clear();
}

void kv_allocator::clear() {
  const std::size_t units = capacity_ / page_size_;
  free_.reset_capacity(units);
  is_free_.assign(units + 1, 0);
  for (std::size_t i = 1; i <= units; ++i) {
    free_.push_back(static_cast<std::int32_t>(i));
    is_free_[i] = 1;
  }
}

bool kv_allocator::alloc(std::size_t n, std::vector<kv_index>& out) {
  assert(page_size_ == 1);
  if (n > free_.size()) return false;
  const std::size_t start = out.size();
  free_.pop_front_into(n, out);
  for (std::size_t i = start; i < out.size(); ++i)
    is_free_[out[i]] = 0;
  return true;
}

std::size_t kv_allocator::pages_needed(std::size_t seq_len, std::size_t n) const noexcept {
  const std::size_t p = page_size_;
  return (seq_len + n + p - 1) / p - (seq_len + p - 1) / p;
}

bool kv_allocator::alloc_extend(std::size_t seq_len, kv_index last_index, std::size_t n,
                                std::vector<kv_index>& out) {
  if (page_size_ == 1) return alloc(n, out);
  const std::size_t p = page_size_;
  const std::size_t pages = pages_needed(seq_len, n);
  if (pages > free_.size()) return false;
  out.reserve(out.size() + n);
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
    is_free_[page] = 0;
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
  const std::size_t units = capacity_ / page_size_;
  if (page_size_ == 1) {
    // One pass: check and mark each id; on the first bad one, unmark what this call marked
    // (an id freed twice — already free, or twice in `ids` — or out of range changes nothing).
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const kv_index id = ids[i];
      const bool in_range = id > 0 && static_cast<std::size_t>(id) <= units;
      if (!in_range || is_free_[id]) {
        for (std::size_t j = 0; j < i; ++j)
          is_free_[ids[j]] = 0;
        if (!in_range)
          return {errc::invalid_argument, "kv index " + std::to_string(id) + " out of range"};
        return {errc::double_free, "kv index " + std::to_string(id) + " freed twice"};
      }
      is_free_[id] = 1;
    }
    free_.push_back_range(ids);
    return {};
  }
  // Paged: sorted unique page ids, prepended (torch.unique(x // P) then cat((pages, free))).
  scratch_.clear();
  // ids of one page are adjacent: drop repeats on the fly. The page of an id is id / P
  // (rounded toward zero, like the division for a negative id: both are out of range).
  const auto page_of = [this](kv_index id) -> std::int32_t {
    if (page_shift_ >= 0 && id >= 0) return id >> page_shift_;
    return id / static_cast<kv_index>(page_size_);
  };
  for (kv_index id : ids) {
    const std::int32_t page = page_of(id);
    if (scratch_.empty() || scratch_.back() != page) scratch_.push_back(page);
  }
  std::sort(scratch_.begin(), scratch_.end());
  scratch_.erase(std::unique(scratch_.begin(), scratch_.end()), scratch_.end());
  for (std::int32_t page : scratch_) {
    if (page <= 0 || static_cast<std::size_t>(page) > units)
      return {errc::invalid_argument, "kv page " + std::to_string(page) + " out of range"};
    if (is_free_[page])
      return {errc::double_free, "kv page " + std::to_string(page) + " freed twice"};
  }
  for (auto it = scratch_.rbegin(); it != scratch_.rend(); ++it) {
    is_free_[*it] = 1;
    free_.push_front(*it);
  }
  return {};
}

bool kv_allocator::is_free(kv_index id) const noexcept {
  const std::size_t unit = static_cast<std::size_t>(id) / page_size_;
  return unit < is_free_.size() && is_free_[unit] != 0;
}

}  // namespace hc
