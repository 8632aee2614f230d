#include "actors/radix_cache/slot_allocator.hpp"

#include <string>

namespace hc {

slot_allocator::slot_allocator(std::size_t slots) : capacity_(slots) {
  clear();
}

void slot_allocator::clear() {
  free_.reset_capacity(capacity_);
  state_.assign(capacity_ + 1, 0);
  for (std::size_t i = 1; i <= capacity_; ++i) {
    free_.push_back(static_cast<slot_id>(i));
    state_[i] = 1;
  }
  group_.clear();
  group_active_ = false;
}

bool slot_allocator::alloc(std::size_t n, std::vector<slot_id>& out) {
  if (n == 0) return true;
  if (group_active_ && n == 1 && !group_.empty()) {
    const slot_id s = group_.front();
    group_.pop_front();
    state_[s] = 0;
    out.push_back(s);
    return true;
  }
  if (n > free_.size()) return false;
  const std::size_t start = out.size();
  free_.pop_front_into(n, out);
  for (std::size_t i = start; i < out.size(); ++i)
    state_[out[i]] = 0;
  return true;
}

slot_id slot_allocator::alloc_one() {
  std::vector<slot_id> one;
  one.reserve(1);
  return alloc(1, one) ? one[0] : no_slot;
}

status slot_allocator::free(std::span<const slot_id> slots) {
  for (slot_id s : slots) {
    if (s <= 0 || static_cast<std::size_t>(s) > capacity_)
      return {errc::invalid_argument, "slot " + std::to_string(s) + " out of range"};
    if (state_[s] != 0) return {errc::double_free, "slot " + std::to_string(s) + " freed twice"};
  }
  for (slot_id s : slots) {
    state_[s] = 1;
    free_.push_back(s);
  }
  return {};
}

bool slot_allocator::group_begin(std::size_t k) {
  group_end();
  if (k == 0 || k > free_.size()) return false;
  for (std::size_t i = 0; i < k; ++i) {
    const slot_id s = free_.pop_front();
    state_[s] = 2;
    group_.push_back(s);
  }
  group_active_ = true;
  return true;
}

void slot_allocator::group_end() {
  for (slot_id s : group_) {
    state_[s] = 1;
    free_.push_back(s);
  }
  group_.clear();
  group_active_ = false;
}

bool slot_allocator::is_free(slot_id s) const noexcept {
  return s > 0 && static_cast<std::size_t>(s) <= capacity_ && state_[s] == 1;
}

row_allocator::row_allocator(std::size_t rows) : capacity_(rows) {
  clear();
}

void row_allocator::clear() {
  free_.reset_capacity(capacity_);
  is_free_.assign(capacity_ + 1, 0);
  for (std::size_t i = 1; i <= capacity_; ++i) {
    free_.push_back(static_cast<row_id>(i));
    is_free_[i] = 1;
  }
}

row_id row_allocator::alloc() {
  if (free_.empty()) return no_row;
  const row_id r = free_.pop_front();
  is_free_[r] = 0;
  return r;
}

status row_allocator::free(row_id r) {
  if (r <= 0 || static_cast<std::size_t>(r) > capacity_)
    return {errc::invalid_argument, "row " + std::to_string(r) + " out of range"};
  if (is_free_[r]) return {errc::double_free, "row " + std::to_string(r) + " freed twice"};
  is_free_[r] = 1;
  free_.push_back(r);
  return {};
}

}  // namespace hc
