#pragma once
// Internal to schema/ (the client library; hcbench times it, BM_StorePartsPlan): how
// client_store::set_from / get_into cut a batch of Store values into parts whose copies
// between the caller's memory and the arena overlap the node's work on the part before,
// and those copies.
//
// A part is a run of whole entries (a value is never split: the node reads or writes it in
// one piece) whose segments take distinct arena bytes. Two parts may run side by side (one
// copied while the node works on the other) only if their arena ranges are disjoint; a
// caller that lays values out one after another in the arena gets such parts — `disjoint`
// says when they are not (a caller that reuses arena space, e.g. every value at offset 0).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "actors/common/status.hpp"
#include "schema/client.hpp"

namespace hc::store_parts {

/// Entries [first, last), their segments from `first_segment` on (the flat index over all
/// entries' segments, as the caller's address list runs), and the arena range [lo, hi)
/// their segments cover (lo == hi: no bytes).
struct part {
  std::size_t first = 0, last = 0;
  std::size_t first_segment = 0;
  std::uint64_t lo = 0, hi = 0;
};

/// invalid_argument naming the first problem: `addresses` is not one per segment, a
/// segment lies outside an arena of `arena_bytes`, a segment with bytes has a null
/// address, or two segments of one value overlap in the arena. Nothing is copied before
/// this passes.
status check(std::span<const store_entry> entries, std::span<const std::uintptr_t> addresses,
             std::uint64_t arena_bytes);

/// The entries (which passed `check`) cut into parts of at most `part_bytes` each (a larger
/// value is a part of its own; `part_bytes` 0: no limit) and of at most `max_values` values
/// (the node's keys per call; 0: no limit), and before a value whose arena ranges meet
/// those of a value already in the part. No part is empty; none for no entries.
std::vector<part> split(std::span<const store_entry> entries, std::uint64_t part_bytes,
                        std::size_t max_values = 0);

/// Whether the two parts' arena ranges do not meet (a part without bytes meets none).
bool disjoint(const part& a, const part& b) noexcept;

/// Copies each segment of `p`'s entries from its address into the arena.
void copy_in(const part& p, std::span<const store_entry> entries,
             std::span<const std::uintptr_t> addresses, std::span<std::byte> arena) noexcept;

/// Copies each segment of `p`'s entries that `present` marks (one bool per entry of `p`,
/// in order) from the arena to its address; the others' addresses are not touched.
void copy_out(const part& p, std::span<const store_entry> entries,
              std::span<const std::uintptr_t> addresses, std::span<const std::byte> arena,
              const std::vector<bool>& present) noexcept;

}  // namespace hc::store_parts
