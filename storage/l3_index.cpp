#include "storage/l3_index.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace hc {
namespace {

constexpr std::size_t min_slots = 16;

/// Slots for n values at most 7/8 full.
std::size_t slots_for(std::size_t n) {
  std::size_t slots = min_slots;
  while (slots - slots / 8 < n)
    slots *= 2;
  return slots;
}

}  // namespace

l3_index::~l3_index() {
  for (record* r = head_; r != nullptr;) {
    record* next = r->next_;
    ::operator delete(r);
    r = next;
  }
}

std::uint64_t l3_index::hash_of(std::string_view key) noexcept {
  return XXH3_64bits(key.data(), key.size());
}

void l3_index::reserve(std::size_t n) {
  if (slots_for(n) > capacity_) rehash(slots_for(n));
}

l3_index::record* l3_index::find(std::string_view key) const noexcept {
  if (size_ == 0) return nullptr;
  const std::uint64_t h = hash_of(key);
  const std::uint8_t tag = tag_of(h);
  const std::size_t mask = capacity_ - 1;
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    if (tags_[i] == 0) return nullptr;
    if (tags_[i] == tag) {
      record* r = slots_[i];
      if (r->hash_ == h && r->key() == key) return r;
    }
  }
}

void l3_index::place(record* r) noexcept {
  const std::size_t mask = capacity_ - 1;
  std::size_t i = r->hash_ & mask;
  while (tags_[i] != 0)
    i = (i + 1) & mask;
  tags_[i] = tag_of(r->hash_);
  slots_[i] = r;
}

void l3_index::rehash(std::size_t slots) {
  auto old_slots = std::move(slots_);
  auto old_tags = std::move(tags_);
  const std::size_t old_capacity = capacity_;
  slots_ = std::make_unique<record*[]>(slots);
  tags_ = std::make_unique<std::uint8_t[]>(slots);  // value-initialised: all free
  capacity_ = slots;
  for (std::size_t i = 0; i < old_capacity; ++i)
    if (old_tags[i] != 0) place(old_slots[i]);
}

l3_index::record* l3_index::insert(std::string_view key, const l3_value_entry& e) {
  if (key.size() > UINT32_MAX) throw std::length_error("l3_index: key too long");
  if (size_ + 1 > capacity_ - capacity_ / 8) rehash(slots_for(size_ + 1));
  void* block = ::operator new(sizeof(record) + key.size());
  segment_list* in = nullptr;
  try {
    in = &segments_[e.at.segment];
  } catch (...) {
    ::operator delete(block);
    throw;
  }
  // Nothing below throws.
  auto* r = new (block) record();
  r->e = e;
  r->hash_ = hash_of(key);
  r->key_size_ = static_cast<std::uint32_t>(key.size());
  std::memcpy(r + 1, key.data(), key.size());
  place(r);
  link_last(r);
  link_in_segment(r, *in);
  ++size_;
  key_bytes_ += key.size();
  return r;
}

void l3_index::erase(record* r) noexcept {
  const std::size_t mask = capacity_ - 1;
  std::size_t i = r->hash_ & mask;
  while (slots_[i] != r)
    i = (i + 1) & mask;
  // Backward shift: pull later entries of the run into the hole where their home allows.
  for (std::size_t j = (i + 1) & mask; tags_[j] != 0; j = (j + 1) & mask) {
    const std::size_t home = slots_[j]->hash_ & mask;
    // j may move to i when its home is not in the cyclic range (i, j].
    const bool home_in_between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (home_in_between) continue;
    slots_[i] = slots_[j];
    tags_[i] = tags_[j];
    i = j;
  }
  tags_[i] = 0;
  slots_[i] = nullptr;
  unlink(r);
  unlink_from_segment(r);
  --size_;
  key_bytes_ -= r->key_size_;
  ::operator delete(r);
}

void l3_index::link_last(record* r) noexcept {
  r->prev_ = tail_;
  r->next_ = nullptr;
  (tail_ ? tail_->next_ : head_) = r;
  tail_ = r;
}

void l3_index::unlink(record* r) noexcept {
  (r->prev_ ? r->prev_->next_ : head_) = r->next_;
  (r->next_ ? r->next_->prev_ : tail_) = r->prev_;
  r->prev_ = r->next_ = nullptr;
}

void l3_index::link_in_segment(record* r, segment_list& l) noexcept {
  r->seg_prev_ = l.last;
  r->seg_next_ = nullptr;
  (l.last ? l.last->seg_next_ : l.first) = r;
  l.last = r;
  ++l.count;
}

void l3_index::unlink_from_segment(record* r) noexcept {
  const auto it = segments_.find(r->e.at.segment);
  segment_list& l = it->second;
  (r->seg_prev_ ? r->seg_prev_->seg_next_ : l.first) = r->seg_next_;
  (r->seg_next_ ? r->seg_next_->seg_prev_ : l.last) = r->seg_prev_;
  r->seg_prev_ = r->seg_next_ = nullptr;
  if (--l.count == 0) segments_.erase(it);
}

void l3_index::relocate(record* r, value_location to) {
  segment_list& dst = segments_[to.segment];  // may throw: nothing has changed yet
  ++dst.count;  // keeps dst in the map while r leaves its list, which may be dst
  unlink_from_segment(r);
  --dst.count;
  r->e.at = to;
  link_in_segment(r, dst);
}

l3_index::record* l3_index::first_in_segment(std::uint64_t segment) const noexcept {
  const auto it = segments_.find(segment);
  return it == segments_.end() ? nullptr : it->second.first;
}

std::size_t l3_index::count_in_segment(std::uint64_t segment) const noexcept {
  const auto it = segments_.find(segment);
  return it == segments_.end() ? 0 : it->second.count;
}

std::vector<std::uint64_t> l3_index::segment_ids() const {
  std::vector<std::uint64_t> ids;
  ids.reserve(segments_.size());
  for (const auto& [id, l] : segments_)
    ids.push_back(id);
  return ids;
}

std::string l3_index::check() const {
  std::size_t listed = 0;
  for (const auto& [id, l] : segments_) {
    if (l.count == 0) return "segment " + std::to_string(id) + " has an empty list";
    std::size_t n = 0;
    const record* prev = nullptr;
    for (const record* r = l.first; r != nullptr; prev = r, r = r->seg_next_) {
      if (r->seg_prev_ != prev) return "segment " + std::to_string(id) + ": a broken back link";
      if (r->e.at.segment != id)
        return "a value of segment " + std::to_string(r->e.at.segment) + " is listed in " +
               std::to_string(id) + " (e.at changed without relocate)";
      if (++n > l.count) return "segment " + std::to_string(id) + " lists more than it counts";
    }
    if (n != l.count || l.last != prev)
      return "segment " + std::to_string(id) + " lists " + std::to_string(n) + " of " +
             std::to_string(l.count);
    listed += n;
  }
  if (listed != size_)
    return std::to_string(listed) + " values listed by segment, " + std::to_string(size_) + " held";
  return {};
}

void l3_index::make_most_recent(record* r) noexcept {
  if (r == tail_) return;
  unlink(r);
  link_last(r);
}

void l3_index::order_by_seq() {
  // Sorted with the sequence beside the pointer: comparisons that read each record would
  // miss the cache (a third of a 3 M-value load's time went there).
  std::vector<std::pair<std::uint64_t, record*>> all;
  all.reserve(size_);
  for (record* r = head_; r != nullptr; r = r->next_)
    all.emplace_back(r->e.seq, r);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  head_ = tail_ = nullptr;
  for (const auto& [seq, r] : all)
    link_last(r);
}

std::size_t l3_index::requested_bytes() const noexcept {
  // A segment's map node holds its id, its list and a link; a bucket is a pointer.
  constexpr std::size_t per_segment =
      sizeof(std::pair<const std::uint64_t, segment_list>) + sizeof(void*);
  return size_ * sizeof(record) + key_bytes_ + capacity_ * (sizeof(record*) + 1) +
         segments_.size() * per_segment + segments_.bucket_count() * sizeof(void*);
}

}  // namespace hc
