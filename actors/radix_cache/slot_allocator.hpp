#pragma once
// L1 SSM slot allocator (SGLang MambaSlotAllocator, cache-semantics.md §2.5).
//
//  * free list [1..N]; slot 0 is the reserved dummy and is never handed out;
//  * alloc(n) takes the first n slots or nothing (no partial allocation);
//  * free appends (FIFO reuse);
//  * group pre-allocation (upstream PR 25000): group_begin(k) takes k slots at once (all or
//    nothing; on failure no group is active); while a group is active, alloc(1) pops from
//    the group first; group_end() returns the unused group slots to the end of the free
//    list. Observable ids and available() change while a group is active.
//
// A slot freed twice, or out of range, is reported and ignored (never corrupts the list).
//
// Thread safety: none; confined to the radix_cache actor.

#include <cstddef>
#include <deque>
#include <span>
#include <vector>

#include "actors/common/ids.hpp"
#include "actors/common/status.hpp"
#include "actors/radix_cache/id_ring.hpp"

namespace hc {

class slot_allocator {
 public:
  /// A pool of `slots` usable slots, ids 1..slots.
  explicit slot_allocator(std::size_t slots);

  std::size_t capacity() const noexcept { return capacity_; }
  /// Slots on the free list (slots held by an active group are not counted).
  std::size_t available() const noexcept { return free_.size(); }

  /// Appends n slots to out, or returns false and changes nothing.
  bool alloc(std::size_t n, std::vector<slot_id>& out);
  /// One slot, or no_slot.
  slot_id alloc_one();

  /// Returns slots to the end of the free list, in order.
  status free(std::span<const slot_id> slots);
  status free_one(slot_id s) { return free(std::span<const slot_id>(&s, 1)); }

  /// Group pre-allocation; returns true if a group of k slots is now active.
  bool group_begin(std::size_t k);
  /// Returns the unused slots of the active group (if any) to the end of the free list.
  void group_end();
  bool group_active() const noexcept { return group_active_; }

  void clear();
  bool is_free(slot_id s) const noexcept;

 private:
  std::size_t capacity_;
  id_ring free_;
  std::vector<std::uint8_t> state_;  // 0 = in use, 1 = free, 2 = held by the group
  std::deque<slot_id> group_;
  bool group_active_ = false;
};

/// Request rows (SGLang ReqToTokenPool): free list [1..N], alloc from the front, free
/// appends. Same contract as slot_allocator without groups.
class row_allocator {
 public:
  explicit row_allocator(std::size_t rows);
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t available() const noexcept { return free_.size(); }
  /// A row id, or no_row if none is free.
  row_id alloc();
  status free(row_id r);
  void clear();

 private:
  std::size_t capacity_;
  id_ring free_;
  std::vector<std::uint8_t> is_free_;
};

}  // namespace hc
