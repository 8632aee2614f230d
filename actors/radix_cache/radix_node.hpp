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
// Host tier (HiCache, cache-semantics.md §5.2; all fields stay empty without it): KV and SSM
// state live on the device and/or the host independently.
//   * backed up: host_value holds L2 ids for every token (set by a D→H backup);
//   * evicted  : the device KV is gone (value empty, no device slot); only backed-up nodes
//                are evicted, and an evicted node's children are evicted too. Evicted
//                nodes are in neither device LRU list.
//   * host SSM : mamba_host != no_slot; such nodes are in the host-mamba LRU list.
//   * D-leaf   : not evicted, unlocked, no non-evicted child (device eviction candidates);
//   * H-leaf   : evicted, backed up, no children, not host-protected (host eviction).
//
// Invariants (checked by radix_tree::check_invariants):
//   full_lock_ref >= mamba_lock_ref >= 0; parent.full_lock_ref >= child.full_lock_ref;
//   key.size() == value.size(), a positive multiple of page_size; a full-locked leaf is
//   mamba-locked; the evictable/protected totals equal the sums over nodes; key, value and
//   host_value hold no unused capacity, and a pooled (released) node holds no buffer;
//   a value kept as runs (node_kv) is whole units of the KV pool.

#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "actors/common/ids.hpp"
#include "actors/radix_cache/kv_events.hpp"
#include "actors/radix_cache/node_kv.hpp"
#include "actors/radix_cache/write_fences.hpp"

namespace hc {

struct radix_node;

/// A node's children with their first tokens beside them: find scans a contiguous array of
/// 32-bit tokens instead of dereferencing every child, and a wide list (a system prompt
/// with thousands of conversations under it) also keeps a hash index from first token to
/// child, so finding one costs O(1) as SGLang's dict of children does. Order is not
/// meaningful (removal moves the last child into the gap; each child knows its position,
/// so removal is O(1) too). A child's first token never changes while it is listed: a split
/// replaces the child by the new parent, which starts with the same token. A single child
/// (most internal nodes of a conversation tree have one) is kept inline, with no heap
/// storage: the vectors hold the list only from two children on.
class child_list {
 public:
  using iterator = radix_node* const*;
  /// Lists of at least this many children keep the hash index (dropped below half of it);
  /// below, a scan of the contiguous first tokens costs no more than a hash lookup.
  static constexpr std::size_t wide = 512;

  child_list() = default;
  child_list(std::initializer_list<radix_node*> nodes) {  // tests build small trees by hand
    for (radix_node* n : nodes)
      push_back(n);
  }

  iterator begin() const noexcept { return nodes(); }
  iterator end() const noexcept { return nodes() + size(); }
  std::size_t size() const noexcept {
    return nodes_.empty() ? static_cast<std::size_t>(one_ != nullptr) : nodes_.size();
  }
  bool empty() const noexcept { return one_ == nullptr && nodes_.empty(); }
  radix_node* operator[](std::size_t i) const noexcept { return nodes()[i]; }
  /// The first token of child i (0 for a child without a key, which only tests make).
  token_id first_token(std::size_t i) const noexcept { return firsts()[i]; }
  std::span<const token_id> first_tokens() const noexcept { return {firsts(), size()}; }
  /// Whether the hash index is kept (for tests).
  bool indexed() const noexcept { return index_ != nullptr; }

  /// The child starting with `first` that `accept(child)` takes, or null. Several children
  /// may share a first token (other namespaces, or pages longer than one token); at most
  /// one of them is ever accepted, so the order they are tried in does not matter.
  template <class Accept>
  radix_node* find(token_id first, Accept&& accept) const;

  inline void push_back(radix_node* n);
  /// Removes n. REQUIRES: n is listed.
  inline void remove(radix_node* n) noexcept;
  /// Puts `to` where `from` was. REQUIRES: from is listed; to starts with from's token.
  inline void replace(radix_node* from, radix_node* to);
  void clear() noexcept {
    one_ = nullptr;
    one_first_ = 0;
    nodes_.clear();
    firsts_.clear();
    index_.reset();
  }

 private:
  using hash_index = std::unordered_multimap<token_id, radix_node*>;
  void build_index();
  void drop_from_index(token_id first, const radix_node* n) noexcept;
  radix_node* const* nodes() const noexcept { return nodes_.empty() ? &one_ : nodes_.data(); }
  const token_id* firsts() const noexcept { return nodes_.empty() ? &one_first_ : firsts_.data(); }

  radix_node* one_ = nullptr;       ///< the only child, while there are fewer than two
  token_id one_first_ = 0;          ///< its first token
  std::vector<radix_node*> nodes_;  ///< the children, from two on
  std::vector<token_id> firsts_;
  std::unique_ptr<hash_index> index_;  ///< while size() >= wide / 2 after reaching wide
};

struct radix_node {
  // --- tree structure ---
  radix_node* parent = nullptr;
  child_list children;
  /// This node's position in its parent's child_list (kept by the list).
  std::uint32_t child_index = 0;
  std::vector<token_id> key;
  /// The device KV ids, one per token of key, kept as runs where they are runs (node_kv:
  /// whole pool units as one id per unit; at page 1, several runs encoded), set by
  /// radix_tree::set_value; a split keeps runs on both sides. Empty while evicted.
  node_kv value;
  /// Per-page chained digests; empty until first needed (events, L3 keys).
  std::vector<page_digest> hashes;
  slot_id mamba = no_slot;
  namespace_id ns = 0;

  // --- locks ---
  std::int32_t full_lock_ref = 0;
  std::int32_t mamba_lock_ref = 0;

  // --- host tier ---
  std::vector<kv_index> host_value;
  slot_id mamba_host = no_slot;
  /// protect_host / protect_host_mamba counts (prefetch, L3 backup in flight).
  std::int32_t host_lock_ref = 0;
  std::int32_t mamba_host_lock_ref = 0;
  /// Insert hits, for write_through_selective.
  std::uint32_t hit_count = 0;
  /// A D→H write is queued; the node is full-locked until backup_done().
  bool backup_in_flight = false;
  /// That write also copies the device slot: the slot is mamba-locked until backup_done()
  /// (evicted before the copy ran, it could be reused and the host get its new bytes).
  bool backup_locks_slot = false;

  // --- overlap scheduling (write_fences.hpp): opaque to the tree, copied on split ---
  /// Forwards that may still be writing this node's KV or SSM state (their session cached
  /// it while they ran); other sessions read it only after they ended.
  std::vector<writer_mark> writers;

  // --- recency: monotone logical time, for the idle LRU-order check ---
  std::uint64_t last_access = 0;
  /// Unique, never reused while the tree lives; 0 = node slot is free (pool).
  std::uint64_t id = 0;

  // --- intrusive LRU links (head side = most recent) ---
  radix_node* full_prev = nullptr;
  radix_node* full_next = nullptr;
  radix_node* mamba_prev = nullptr;
  radix_node* mamba_next = nullptr;
  radix_node* host_mamba_prev = nullptr;
  radix_node* host_mamba_next = nullptr;
  bool in_full_lru = false;
  bool in_mamba_lru = false;
  bool in_host_mamba_lru = false;

  bool is_tombstone() const noexcept { return mamba == no_slot; }
  bool is_leaf() const noexcept { return children.empty(); }
  bool backed_up() const noexcept { return !host_value.empty(); }
  bool evicted() const noexcept { return value.empty() && !key.empty(); }
  bool host_protected() const noexcept { return host_lock_ref > 0 || mamba_host_lock_ref > 0; }
  /// True if some child still has its KV on the device.
  bool has_device_child() const noexcept {
    for (const radix_node* c : children)
      if (!c->evicted()) return true;
    return false;
  }
};

void child_list::push_back(radix_node* n) {
  const token_id first = n->key.empty() ? token_id{0} : n->key[0];
  if (empty()) {
    one_ = n;
    one_first_ = first;
    n->child_index = 0;
    return;
  }
  if (nodes_.empty()) {  // the second child: both move to the vectors
    nodes_.reserve(2);
    firsts_.reserve(2);
    nodes_.push_back(one_);
    firsts_.push_back(one_first_);
    one_ = nullptr;
    one_first_ = 0;
  }
  n->child_index = static_cast<std::uint32_t>(nodes_.size());
  nodes_.push_back(n);
  firsts_.push_back(first);
  if (index_) {
    index_->emplace(first, n);
  } else if (nodes_.size() >= wide) {
    build_index();
  }
}

void child_list::remove(radix_node* n) noexcept {
  const std::size_t i = n->child_index;
  if (nodes_.empty()) {
    assert(i == 0 && one_ == n && "not a listed child");
    one_ = nullptr;
    one_first_ = 0;
    return;
  }
  assert(i < nodes_.size() && nodes_[i] == n && "not a listed child");
  if (index_) drop_from_index(firsts_[i], n);
  nodes_[i] = nodes_.back();
  firsts_[i] = firsts_.back();
  nodes_[i]->child_index = static_cast<std::uint32_t>(i);
  nodes_.pop_back();
  firsts_.pop_back();
  if (index_ && nodes_.size() < wide / 2) index_.reset();
  if (nodes_.size() == 1) {  // back to one child: inline, the vectors' storage given back
    one_ = nodes_[0];
    one_first_ = firsts_[0];
    std::vector<radix_node*>().swap(nodes_);
    std::vector<token_id>().swap(firsts_);
  }
}

void child_list::replace(radix_node* from, radix_node* to) {
  const std::size_t i = from->child_index;
  if (nodes_.empty()) {
    assert(i == 0 && one_ == from && "not a listed child");
    one_ = to;
    to->child_index = 0;
    return;
  }
  assert(i < nodes_.size() && nodes_[i] == from && "not a listed child");
  nodes_[i] = to;
  to->child_index = static_cast<std::uint32_t>(i);
  if (index_) {
    drop_from_index(firsts_[i], from);
    index_->emplace(firsts_[i], to);
  }
}

inline void child_list::build_index() {
  index_ = std::make_unique<hash_index>(nodes_.size() * 2);
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    index_->emplace(firsts_[i], nodes_[i]);
}

inline void child_list::drop_from_index(token_id first, const radix_node* n) noexcept {
  auto [lo, hi] = index_->equal_range(first);
  for (auto it = lo; it != hi; ++it)
    if (it->second == n) {
      index_->erase(it);
      return;
    }
  assert(false && "a listed child is missing from the index");
}

template <class Accept>
radix_node* child_list::find(token_id first, Accept&& accept) const {
  if (index_) {
    const auto [lo, hi] = index_->equal_range(first);
    for (auto it = lo; it != hi; ++it)
      if (accept(it->second)) return it->second;
    return nullptr;
  }
  // Blocks of 16 first tokens compared without a branch (the compiler vectorises the mask),
  // then each candidate of the block in order.
  constexpr std::size_t block = 16;
  const std::size_t count = size();
  const token_id* firsts_at = firsts();
  radix_node* const* nodes_at = nodes();
  std::size_t i = 0;
  for (; i + block <= count; i += block) {
    std::uint32_t mask = 0;
    for (std::size_t j = 0; j < block; ++j)
      mask |= static_cast<std::uint32_t>(firsts_at[i + j] == first) << j;
    for (; mask != 0; mask &= mask - 1) {
      radix_node* c = nodes_at[i + static_cast<std::size_t>(std::countr_zero(mask))];
      if (accept(c)) return c;
    }
  }
  for (; i < count; ++i)
    if (firsts_at[i] == first && accept(nodes_at[i])) return nodes_at[i];
  return nullptr;
}

/// Empties v and gives its storage back (clear() keeps it): a demoted node's device ids,
/// a released node's buffers.
template <class T>
void release(std::vector<T>& v) noexcept {
  std::vector<T>().swap(v);
}

/// Drops v's first n elements into storage of exactly the rest: erase() would keep the
/// whole block, the split-off head's share of it unused for the node's life (the index's
/// memory per cached token, BENCHMARKS.md §10.1). Copies as much as erase() moves.
/// REQUIRES: n <= v.size().
template <class T>
void drop_front(std::vector<T>& v, std::size_t n) {
  std::vector<T>(v.begin() + static_cast<std::ptrdiff_t>(n), v.end()).swap(v);
}

/// A handle on a node that can be checked for staleness: valid while the node that had
/// this id still exists. Cheap to copy; the tree owns the node.
struct node_ref {
  radix_node* node = nullptr;
  std::uint64_t id = 0;
  friend bool operator==(const node_ref&, const node_ref&) = default;
};

}  // namespace hc
