#pragma once
// A node of the prefix radix tree (cache-semantics.md §2.1) and its state machine.
//
// States of a non-root node (KV always present while the node exists):
//   * holding  : mamba != no_slot. In the full LRU and in the mamba LRU.
//   * tombstone: mamba == no_slot. In the full LRU only. Always internal (has children):
//                a tombstone that loses its last child is deleted at once (cascade),
//                unless it is full-locked (cannot happen, §2.3 inv. 2).
//   * locked   : full_lock_ref > 0 (this node or a descendant is a lock target) and/or
//                mamba_lock_ref > 0 (this node is a lock target). Locked KV counts as
//                protected, unlocked KV as evictable; likewise for the slot.
// The root has an empty key, no slot, is never in an LRU list and is never evicted.
//
// Invariants (checked by radix_tree::check_invariants):
//   full_lock_ref >= mamba_lock_ref >= 0; parent.full_lock_ref >= child.full_lock_ref;
//   key.size() == value.size(), a positive multiple of page_size; a full-locked leaf is
//   mamba-locked; the evictable/protected totals equal the sums over nodes.

#include <cstdint>
#include <span>
#include <vector>

#include "actors/common/ids.hpp"
#include "actors/radix_cache/kv_events.hpp"

namespace hc {

struct radix_node {
  // --- tree structure ---
  radix_node* parent = nullptr;
  std::vector<radix_node*> children;
  std::vector<token_id> key;
  std::vector<kv_index> value;
  /// Per-page chained digests; empty until first needed (events, L3 keys).
  std::vector<page_digest> hashes;
  slot_id mamba = no_slot;
  namespace_id ns = 0;

  // --- locks ---
  std::int32_t full_lock_ref = 0;
  std::int32_t mamba_lock_ref = 0;

  // --- recency: monotone logical time, for the idle LRU-order check ---
  std::uint64_t last_access = 0;
  /// Unique, never reused while the tree lives; 0 = node slot is free (pool).
  std::uint64_t id = 0;

  // --- intrusive LRU links (head side = most recent) ---
  radix_node* full_prev = nullptr;
  radix_node* full_next = nullptr;
  radix_node* mamba_prev = nullptr;
  radix_node* mamba_next = nullptr;
  bool in_full_lru = false;
  bool in_mamba_lru = false;

  bool is_tombstone() const noexcept { return mamba == no_slot; }
  bool is_leaf() const noexcept { return children.empty(); }
};

/// A handle on a node that can be checked for staleness: valid while the node that had
/// this id still exists. Cheap to copy; the tree owns the node.
struct node_ref {
  radix_node* node = nullptr;
  std::uint64_t id = 0;
  friend bool operator==(const node_ref&, const node_ref&) = default;
};

}  // namespace hc
