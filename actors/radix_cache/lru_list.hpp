#pragma once
// Intrusive doubly linked LRU list over radix nodes (cache-semantics.md §2.2), with a
// dummy head (most recent side) and tail (least recent side). Three instances exist per
// tree: the full list (non-root nodes with device KV, skip test = full lock), the mamba
// list (nodes holding a device slot, skip test = mamba lock) and the host-mamba list
// (nodes holding a host slot, skip test = host protection; §5.2). Walks "towards MRU"
// follow prev links.
//
// Thread safety: none; confined to the radix_cache actor.

#include <cassert>
#include <span>

#include "actors/radix_cache/radix_node.hpp"

namespace hc {

enum class lru_kind { full, mamba, host_mamba };

template <lru_kind K>
class lru_list {
 public:
  lru_list() {
    prev(&head_) = nullptr;
    next(&head_) = &tail_;
    prev(&tail_) = &head_;
    next(&tail_) = nullptr;
  }
  lru_list(const lru_list&) = delete;
  lru_list& operator=(const lru_list&) = delete;

  bool contains(const radix_node* n) const noexcept {
    if constexpr (K == lru_kind::full) return n->in_full_lru;
    if constexpr (K == lru_kind::mamba) return n->in_mamba_lru;
    return n->in_host_mamba_lru;
  }
  std::size_t size() const noexcept { return size_; }

  /// Inserts n at the most recent end. REQUIRES: !contains(n).
  void insert_mru(radix_node* n) { insert_after(&head_, n); }
  /// Moves n to the most recent end. REQUIRES: contains(n).
  void reset_mru(radix_node* n) {
    if (next(&head_) == n) return;  // already there
    remove(n);
    insert_after(&head_, n);
  }
  /// Places n at the head, then its parent, grandparent, ... (excluding root), so that
  /// ancestors are always less recent than descendants. The mamba list skips tombstones.
  /// A node already in its place is not relinked (see move_to_front_in_order).
  void reset_node_and_parents_mru(radix_node* n, const radix_node* root) {
    radix_node* after = &head_;
    for (; n != root; n = n->parent)
      if (contains(n)) after = place_after(after, n);
  }
  /// The list that moving each node of `oldest_first` that passes `take` to the most recent
  /// end, in order, gives (a node that is not a member is inserted): those nodes at the
  /// front, the last one most recent, every other member in its order. Each node is
  /// relinked only if it is not already where it ends up, so refreshing a path that is
  /// still at the front (its conversation was matched just before) writes nothing and
  /// touches no other conversation's nodes. REQUIRES: the nodes are distinct.
  template <class Pred>
  void move_to_front_in_order(std::span<radix_node* const> oldest_first, Pred take) {
    radix_node* after = &head_;
    for (auto it = oldest_first.rbegin(); it != oldest_first.rend(); ++it)
      if (take(*it)) after = place_after(after, *it);
  }
  void remove(radix_node* n) {
    assert(contains(n));
    next(prev(n)) = next(n);
    prev(next(n)) = prev(n);
    prev(n) = next(n) = nullptr;
    set_member(n, false);
    --size_;
  }

  /// Least recent node that is not locked, or nullptr.
  radix_node* lru_unlocked() { return prev_unlocked(&tail_); }
  /// Least recent unlocked leaf, or nullptr.
  radix_node* lru_unlocked_leaf() { return prev_unlocked_leaf(&tail_); }
  /// Next unlocked node from n towards the most recent end, or nullptr.
  radix_node* prev_unlocked(radix_node* n) {
    radix_node* x = prev(n);
    while (x != &head_ && locked(x))
      x = prev(x);
    return x == &head_ ? nullptr : x;
  }
  /// Next unlocked leaf from n towards the most recent end, or nullptr. In the full
  /// list a "leaf" is a D-leaf: no child has its KV on the device (§5.2).
  radix_node* prev_unlocked_leaf(radix_node* n) {
    radix_node* x = prev(n);
    while (x != &head_ && (locked(x) || x->has_device_child()))
      x = prev(x);
    return x == &head_ ? nullptr : x;
  }

  /// Iteration from most to least recent: for (n = first(); n; n = after(n)).
  radix_node* first() const { return next(&head_) == &tail_ ? nullptr : next(&head_); }
  radix_node* after(const radix_node* n) const {
    radix_node* x = next(n);
    return x == &tail_ ? nullptr : x;
  }

 private:
  static radix_node*& prev(radix_node* n) {
    if constexpr (K == lru_kind::full) return n->full_prev;
    if constexpr (K == lru_kind::mamba) return n->mamba_prev;
    return n->host_mamba_prev;
  }
  static radix_node*& next(radix_node* n) {
    if constexpr (K == lru_kind::full) return n->full_next;
    if constexpr (K == lru_kind::mamba) return n->mamba_next;
    return n->host_mamba_next;
  }
  static radix_node* next(const radix_node* n) {
    if constexpr (K == lru_kind::full) return n->full_next;
    if constexpr (K == lru_kind::mamba) return n->mamba_next;
    return n->host_mamba_next;
  }
  static bool locked(const radix_node* n) {
    if constexpr (K == lru_kind::full) return n->full_lock_ref > 0;
    if constexpr (K == lru_kind::mamba) return n->mamba_lock_ref > 0;
    return n->host_protected();
  }
  static void set_member(radix_node* n, bool v) {
    if constexpr (K == lru_kind::full)
      n->in_full_lru = v;
    else if constexpr (K == lru_kind::mamba)
      n->in_mamba_lru = v;
    else
      n->in_host_mamba_lru = v;
  }
  /// Puts n right after `where` (moving or inserting it) unless it is already there;
  /// returns n.
  radix_node* place_after(radix_node* where, radix_node* n) {
    if (contains(n)) {
      if (next(where) == n) return n;
      remove(n);
    }
    insert_after(where, n);
    return n;
  }
  void insert_after(radix_node* where, radix_node* n) {
    assert(!contains(n));
    radix_node* nx = next(where);
    prev(n) = where;
    next(n) = nx;
    prev(nx) = n;
    next(where) = n;
    set_member(n, true);
    ++size_;
  }

  mutable radix_node head_;
  mutable radix_node tail_;
  std::size_t size_ = 0;
};

}  // namespace hc
