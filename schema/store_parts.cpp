#include "schema/store_parts.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <string>

namespace hc::store_parts {
namespace {

/// The arena ranges [lo, hi) that the values of a part take, to tell whether the next
/// value's segments meet one of them. Callers mostly lay values out one after another:
/// while a value starts at or after the end of all taken so far, that end alone answers
/// (nothing stored). The first segment that starts below it indexes the part's values in
/// a map, which answers from then on.
class taken_ranges {
 public:
  /// The end of every range taken (0: none).
  std::uint64_t end() const noexcept { return end_; }
  /// `so_far`: the values taken since clear() (the map is built from them when needed).
  bool meets(const store_entry& e, std::span<const store_entry> so_far) {
    for (const store_segment& s : e.segments) {
      if (s.length == 0 || s.offset >= end_) continue;
      index(so_far);
      auto after = by_start_.upper_bound(s.offset);  // the first range starting after it
      if (after != by_start_.end() && after->first < s.offset + s.length) return true;
      if (after != by_start_.begin() && std::prev(after)->second > s.offset) return true;
    }
    return false;
  }
  /// Takes e's segments; `hi`: the end of the last of them in the arena.
  void take(const store_entry& e, std::uint64_t hi) {
    if (indexed_)
      for (const store_segment& s : e.segments)
        if (s.length != 0) by_start_.emplace(s.offset, s.offset + s.length);
    end_ = std::max(end_, hi);
  }
  void clear() noexcept {
    by_start_.clear();
    indexed_ = false;
    end_ = 0;
  }

 private:
  void index(std::span<const store_entry> so_far) {
    if (indexed_) return;
    for (const store_entry& e : so_far)
      for (const store_segment& s : e.segments)
        if (s.length != 0) by_start_.emplace(s.offset, s.offset + s.length);
    indexed_ = true;
  }

  std::map<std::uint64_t, std::uint64_t> by_start_;  // once indexed_
  bool indexed_ = false;
  std::uint64_t end_ = 0;  // of every range taken
};

/// Whether two segments with bytes of one value take the same arena bytes (a copy in would
/// overwrite the first with the second's bytes, a get leave both with the later ones),
/// for a value whose segments are not in arena order (those that are cannot): sorted in
/// `scratch`.
bool segments_overlap(const store_entry& e,
                      std::vector<std::pair<std::uint64_t, std::uint64_t>>& scratch) {
  scratch.clear();
  for (const store_segment& s : e.segments)
    if (s.length != 0) scratch.emplace_back(s.offset, s.offset + s.length);
  std::sort(scratch.begin(), scratch.end());
  for (std::size_t j = 1; j < scratch.size(); ++j)
    if (scratch[j].first < scratch[j - 1].second) return true;
  return false;
}

}  // namespace

status check(std::span<const store_entry> entries, std::span<const std::uintptr_t> addresses,
             std::uint64_t arena_bytes) {
  std::size_t segments = 0;
  for (const store_entry& e : entries)
    segments += e.segments.size();
  if (addresses.size() != segments)
    return error{errc::invalid_argument, std::to_string(addresses.size()) + " addresses for " +
                                             std::to_string(segments) +
                                             " segments (one per segment)"};
  std::size_t k = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> scratch;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    std::uint64_t end = 0;  // of the value's segments so far, while in arena order
    bool in_order = true;
    for (const store_segment& s : entries[i].segments) {
      if (s.offset > arena_bytes || s.length > arena_bytes - s.offset)
        return error{errc::invalid_argument, "entry " + std::to_string(i) + ": segment [" +
                                                 std::to_string(s.offset) + ", +" +
                                                 std::to_string(s.length) + ") is outside the " +
                                                 std::to_string(arena_bytes) + "-byte arena"};
      if (s.length != 0 && addresses[k] == 0)
        return error{errc::invalid_argument,
                     "address " + std::to_string(k) + " (entry " + std::to_string(i) + ") is null"};
      if (s.length != 0) {
        in_order = in_order && s.offset >= end;
        end = s.offset + s.length;
      }
      ++k;
    }
    if (!in_order && segments_overlap(entries[i], scratch))
      return error{errc::invalid_argument,
                   "entry " + std::to_string(i) +
                       ": two of its segments overlap in the arena (a value's segments take "
                       "distinct arena bytes)"};
  }
  return {};
}

std::vector<part> split(std::span<const store_entry> entries, std::uint64_t part_bytes,
                        std::size_t max_values) {
  std::vector<part> parts;
  std::size_t segment = 0;
  std::uint64_t bytes = 0;
  taken_ranges taken;  // the current part's
  for (std::size_t i = 0; i < entries.size(); ++i) {
    std::uint64_t size = 0, lo = UINT64_MAX, hi = 0;
    for (const store_segment& s : entries[i].segments) {
      size += s.length;
      if (s.length == 0) continue;
      lo = std::min(lo, s.offset);
      hi = std::max(hi, s.offset + s.length);
    }
    // A new part when this value would make the part too large or one value too many for
    // the node, or when its arena ranges meet those of a value already in the part (one
    // call cannot carry two values through the same arena bytes).
    if (parts.empty() || (part_bytes != 0 && bytes + size > part_bytes && bytes != 0) ||
        (max_values != 0 && i - parts.back().first == max_values) ||
        (hi != 0 && lo < taken.end() &&
         taken.meets(entries[i], entries.subspan(parts.back().first, i - parts.back().first)))) {
      parts.push_back(part{i, i, segment, 0, 0});
      bytes = 0;
      taken.clear();
    }
    taken.take(entries[i], hi);
    part& p = parts.back();
    p.last = i + 1;
    if (hi != 0) {
      if (p.lo == p.hi) {
        p.lo = lo;
        p.hi = hi;
      } else {
        p.lo = std::min(p.lo, lo);
        p.hi = std::max(p.hi, hi);
      }
    }
    bytes += size;
    segment += entries[i].segments.size();
  }
  return parts;
}

bool disjoint(const part& a, const part& b) noexcept {
  return a.lo == a.hi || b.lo == b.hi || a.hi <= b.lo || b.hi <= a.lo;
}

void copy_in(const part& p, std::span<const store_entry> entries,
             std::span<const std::uintptr_t> addresses, std::span<std::byte> arena) noexcept {
  std::size_t k = p.first_segment;
  for (std::size_t i = p.first; i < p.last; ++i)
    for (const store_segment& s : entries[i].segments) {
      if (s.length != 0)
        std::memcpy(arena.data() + s.offset, reinterpret_cast<const std::byte*>(addresses[k]),
                    s.length);
      ++k;
    }
}

void copy_out(const part& p, std::span<const store_entry> entries,
              std::span<const std::uintptr_t> addresses, std::span<const std::byte> arena,
              const std::vector<bool>& present) noexcept {
  std::size_t k = p.first_segment;
  for (std::size_t i = p.first; i < p.last; ++i)
    for (const store_segment& s : entries[i].segments) {
      if (s.length != 0 && i - p.first < present.size() && present[i - p.first])
        std::memcpy(reinterpret_cast<std::byte*>(addresses[k]), arena.data() + s.offset, s.length);
      ++k;
    }
}

}  // namespace hc::store_parts
