#include "schema/store_parts.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <string>

namespace hc::store_parts {
namespace {

/// The arena ranges [lo, hi) of the segments put in a part so far (disjoint), to tell
/// whether the next value's segments meet one of them.
class taken_ranges {
 public:
  bool meets(std::uint64_t lo, std::uint64_t hi) const {
    auto after = by_start_.upper_bound(lo);  // the first range starting after lo
    if (after != by_start_.end() && after->first < hi) return true;
    return after != by_start_.begin() && std::prev(after)->second > lo;
  }
  /// Values are mostly laid out one after another: then each insert lands at the end.
  void take(std::uint64_t lo, std::uint64_t hi) { by_start_.emplace_hint(by_start_.end(), lo, hi); }
  void clear() noexcept { by_start_.clear(); }

 private:
  std::map<std::uint64_t, std::uint64_t> by_start_;
};

bool meets(const taken_ranges& taken, const store_entry& e) {
  return std::any_of(e.segments.begin(), e.segments.end(), [&](const store_segment& s) {
    return s.length != 0 && taken.meets(s.offset, s.offset + s.length);
  });
}

}  // namespace

status check(std::span<const store_entry> entries, std::span<const std::uintptr_t> addresses,
             std::uint64_t arena_bytes) {
  std::size_t segments = 0;
  for (const store_entry& e : entries)
    segments += e.segments.size();
  if (addresses.size() != segments)
    return error{errc::invalid_argument, "invalid_argument: " + std::to_string(addresses.size()) +
                                             " addresses for " + std::to_string(segments) +
                                             " segments (one per segment)"};
  std::size_t k = 0;
  taken_ranges own;  // one value's segments
  for (std::size_t i = 0; i < entries.size(); ++i) {
    own.clear();
    for (const store_segment& s : entries[i].segments) {
      if (s.offset > arena_bytes || s.length > arena_bytes - s.offset)
        return error{errc::invalid_argument, "invalid_argument: entry " + std::to_string(i) +
                                                 ": segment [" + std::to_string(s.offset) + ", +" +
                                                 std::to_string(s.length) + ") is outside the " +
                                                 std::to_string(arena_bytes) + "-byte arena"};
      if (s.length != 0 && addresses[k] == 0)
        return error{errc::invalid_argument, "invalid_argument: address " + std::to_string(k) +
                                                 " (entry " + std::to_string(i) + ") is null"};
      if (s.length != 0) {
        // Two segments of one value in the same arena bytes: a copy in would overwrite the
        // first with the second's bytes, a get would leave both with the value's later ones.
        if (own.meets(s.offset, s.offset + s.length))
          return error{errc::invalid_argument,
                       "invalid_argument: entry " + std::to_string(i) + ": segment [" +
                           std::to_string(s.offset) + ", +" + std::to_string(s.length) +
                           ") overlaps another segment of the same value in the arena"};
        own.take(s.offset, s.offset + s.length);
      }
      ++k;
    }
  }
  return {};
}

std::vector<part> split(std::span<const store_entry> entries, std::uint64_t part_bytes) {
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
    // A new part when this value would make the part too large, or when its arena ranges
    // meet those of a value already in the part (one call cannot carry two values through
    // the same arena bytes).
    if (parts.empty() || (part_bytes != 0 && bytes + size > part_bytes && bytes != 0) ||
        meets(taken, entries[i])) {
      parts.push_back(part{i, i, segment, 0, 0});
      bytes = 0;
      taken.clear();
    }
    for (const store_segment& s : entries[i].segments)
      if (s.length != 0) taken.take(s.offset, s.offset + s.length);
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
