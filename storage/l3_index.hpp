#pragma once
// The RocksDB store's in-memory index (storage/rocksdb_store.hpp): key → where a value is,
// with the values in recency order and, per value segment, the values it holds. One heap
// block per value — its entry, its hash, its places in the recency order and in its
// segment's list, and its key's bytes together — and an open-addressing table of pointers
// to them with a one-byte hash tag per slot (linear probing, at most 7/8 full,
// backward-shift erase): 204 heap bytes a value for an 84-byte key (188 before the
// segment lists), where a node-based hash map of strings plus a recency list took 254 in three
// allocations (BENCHMARKS.md §13.1). The segment lists let garbage collection and a
// disk-full eviction visit one segment's values without walking the whole index under the
// store's lock (a walk of 1 M records took 0.26 s here, and every get waited for it:
// BENCHMARKS.md §8.1-§8.2).
//
// Contracts: a record stays at its address until it is erased (growing the table moves
// slots, not records), so a pointer taken under the store's lock may be used again after
// the lock was dropped as long as nothing was erased meanwhile. A record's `e.at` changes
// only through relocate() (the segment lists follow it; check() finds one that did not).
// Not thread-safe (the store's mutex guards it).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/value_segments.hpp"

namespace hc {

/// What the store keeps per value.
struct l3_value_entry {
  std::uint64_t size = 0;      ///< stored bytes (header included)
  std::uint64_t seq = 0;       ///< access sequence: larger = more recent (persisted)
  value_location at;           ///< where the payload is
  std::uint64_t checksum = 0;  ///< XXH3-64 of the payload
  bool verified = false;       ///< checksum known good in this process
  /// Touched since its record was last written: 1 + its place in the store's list of such
  /// values; 0 = not.
  std::uint32_t recency_slot = 0;
};

class l3_index {
 public:
  /// One value: its entry (the caller's to change, but for the key) and its key.
  class record {
   public:
    l3_value_entry e;
    std::string_view key() const noexcept {
      return {reinterpret_cast<const char*>(this + 1), key_size_};
    }
    /// The next value in recency order (more recent), or null.
    record* more_recent() const noexcept { return next_; }
    /// The next value of the same segment (in the order they were placed there), or null.
    record* next_in_segment() const noexcept { return seg_next_; }

   private:
    friend class l3_index;
    std::uint64_t hash_ = 0;
    record* prev_ = nullptr;
    record* next_ = nullptr;
    record* seg_prev_ = nullptr;
    record* seg_next_ = nullptr;
    std::uint32_t key_size_ = 0;
  };

  l3_index() = default;
  ~l3_index();
  l3_index(const l3_index&) = delete;
  l3_index& operator=(const l3_index&) = delete;

  std::size_t size() const noexcept { return size_; }
  /// Sizes the table for n values at once (a load that knows its count).
  void reserve(std::size_t n);
  record* find(std::string_view key) const noexcept;
  /// Adds `key` (which must not be there; at most 2^32 - 1 bytes) as the most recent value,
  /// the last of segment e.at.segment's.
  record* insert(std::string_view key, const l3_value_entry& e);
  /// Sets r->e.at to `to`, r now the last value of to.segment's list. Throws only
  /// std::bad_alloc (a segment's first value), and then changes nothing.
  void relocate(record* r, value_location to);
  /// Removes r and frees it.
  void erase(record* r) noexcept;
  /// Moves r to the most recent end of the recency order.
  void make_most_recent(record* r) noexcept;
  /// Re-links every value in order of e.seq, least first (after a load).
  void order_by_seq();
  /// The least recently used value (walk on with record::more_recent), or null.
  record* least_recent() const noexcept { return head_; }
  /// The first value placed in `segment` of those still there (walk on with
  /// record::next_in_segment), or null.
  record* first_in_segment(std::uint64_t segment) const noexcept;
  /// How many values `segment` holds.
  std::size_t count_in_segment(std::uint64_t segment) const noexcept;
  /// The segments that hold values, in no particular order.
  std::vector<std::uint64_t> segment_ids() const;
  /// Empty if every record is in the list of the segment its e.at names, once, and the
  /// lists hold nothing else; else what is wrong (for tests).
  std::string check() const;
  /// Heap bytes the index asked for: its records (entries, links, keys) and its table.
  /// What malloc adds to each block (8-16 bytes) is not in it.
  std::size_t requested_bytes() const noexcept;

 private:
  static std::uint64_t hash_of(std::string_view key) noexcept;
  static std::uint8_t tag_of(std::uint64_t hash) noexcept {
    return static_cast<std::uint8_t>(0x80 | (hash >> 57));
  }
  void rehash(std::size_t slots);
  /// Puts r into the first free slot from its home (the table has room).
  void place(record* r) noexcept;
  void link_last(record* r) noexcept;
  void unlink(record* r) noexcept;
  struct segment_list {
    record* first = nullptr;
    record* last = nullptr;
    std::size_t count = 0;
  };
  void link_in_segment(record* r, segment_list& l) noexcept;
  /// Also drops the segment's entry when r was its last value.
  void unlink_from_segment(record* r) noexcept;

  std::unique_ptr<record*[]> slots_;
  std::unique_ptr<std::uint8_t[]> tags_;  ///< 0 = free, else 0x80 | the hash's top 7 bits
  std::size_t capacity_ = 0;              ///< slots, a power of two (or 0)
  std::size_t size_ = 0;
  std::size_t key_bytes_ = 0;                                 ///< sum of the keys' sizes
  record* head_ = nullptr;                                    ///< least recent
  record* tail_ = nullptr;                                    ///< most recent
  std::unordered_map<std::uint64_t, segment_list> segments_;  ///< only segments holding values
};

}  // namespace hc
