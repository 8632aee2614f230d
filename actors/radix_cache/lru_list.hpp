#pragma once
// Intrusive doubly linked LRU list over radix nodes (cache-semantics.md §2.2), with a
// dummy head (most recent side) and tail (least recent side). Two instances exist per
// tree: the full list (all non-root nodes, skip test = full lock) and the mamba list
// (nodes holding a slot, skip test = mamba lock). Walks "towards MRU" follow prev links.
//
// Thread safety: none; confined to the radix_cache actor.

#include <cassert>

#include "actors/radix_cache/radix_node.hpp"

namespace hc {

enum class lru_kind { full, mamba };

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
    return K == lru_kind::full ? n->in_full_lru : n->in_mamba_lru;
  }
  std::size_t size() const noexcept { return size_; }

  /// Inserts n at the most recent end. REQUIRES: !contains(n).
  void insert_mru(radix_node* n) { insert_after(&head_, n); }
  /// Moves n to the most recent end. REQUIRES: contains(n).
  void reset_mru(radix_node* n) {
    remove(n);
    insert_after(&head_, n);
  }
  /// Places n at the head, then its parent, grandparent, ... (excluding root), so that
  /// ancestors are always less recent than descendants. The mamba list skips tombstones.
  void reset_node_and_parents_mru(radix_node* n, const radix_node* root) {
    radix_node* after = &head_;
    while (n != root) {
      if (K == lru_kind::full || !n->is_tombstone()) {
        remove(n);
        insert_after(after, n);
        after = n;
      }
      n = n->parent;
    }
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
  /// Next unlocked leaf from n towards the most recent end, or nullptr.
  radix_node* prev_unlocked_leaf(radix_node* n) {
    radix_node* x = prev(n);
    while (x != &head_ && (locked(x) || !x->is_leaf()))
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
    return K == lru_kind::full ? n->full_prev : n->mamba_prev;
  }
  static radix_node*& next(radix_node* n) {
    return K == lru_kind::full ? n->full_next : n->mamba_next;
  }
  static radix_node* next(const radix_node* n) {
    return K == lru_kind::full ? n->full_next : n->mamba_next;
  }
  static bool locked(const radix_node* n) {
    return K == lru_kind::full ? n->full_lock_ref > 0 : n->mamba_lock_ref > 0;
  }
  static void set_member(radix_node* n, bool v) {
    (K == lru_kind::full ? n->in_full_lru : n->in_mamba_lru) = v;
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
