// Eviction (cache-semantics.md §3.5). The walk order reproduces MambaRadixCache exactly,
// because the traces check which nodes go and in which order ids return to the pools.
#include <cassert>

#include "actors/radix_cache/radix_tree.hpp"

namespace hc {

void radix_tree::delete_leaf(radix_node* x) {
  remove_child(x->parent, x);
  release_node(x);
}

// Frees a leaf's KV and slot, removes it, then deletes its ancestors that became
// childless tombstones (stopping at root and at full-locked nodes).
radix_tree::leaf_eviction radix_tree::evict_leaf(radix_node* x) {
  assert(x->full_lock_ref == 0 && x->mamba_lock_ref == 0 && !x->is_tombstone());
  leaf_eviction ev{};
  record_remove(x);
  free_kv(x->value);
  ev.tokens = x->value.size();
  free_slot(x->mamba);
  sizes_.full_evictable -= x->value.size();
  sizes_.mamba_evictable -= 1;
  full_lru_.remove(x);
  mamba_lru_.remove(x);
  radix_node* parent = x->parent;
  delete_leaf(x);
  while (parent != root_ && parent->is_tombstone() && parent->is_leaf() &&
         parent->full_lock_ref == 0) {
    assert(parent->mamba_lock_ref == 0);
    record_remove(parent);
    free_kv(parent->value);
    ev.tokens += parent->value.size();
    sizes_.full_evictable -= parent->value.size();
    full_lru_.remove(parent);
    radix_node* up = parent->parent;
    delete_leaf(parent);
    parent = up;
  }
  ev.surviving_parent = parent;
  return ev;
}

std::size_t radix_tree::evict_full(std::size_t n, evict_result& r) {
  std::size_t evicted = 0;
  if (n == 0) return 0;
  radix_node* x = full_lru_.lru_unlocked_leaf();
  while (evicted < n && x != nullptr) {
    radix_node* next = full_lru_.prev_unlocked_leaf(x);
    leaf_eviction ev = evict_leaf(x);
    evicted += ev.tokens;
    r.slots_freed_total += 1;
    // If the surviving ancestor became a leaf it may be the least recent one: restart.
    if (ev.surviving_parent->is_leaf()) next = full_lru_.lru_unlocked_leaf();
    x = next;
  }
  r.tokens_freed_total += evicted;
  return evicted;
}

std::size_t radix_tree::evict_mamba(std::size_t n, evict_result& r) {
  std::size_t evicted = 0;
  if (n == 0) return 0;
  radix_node* x = mamba_lru_.lru_unlocked();
  while (evicted < n && x != nullptr) {
    assert(!x->is_tombstone() && x != root_ && x->mamba_lock_ref == 0);
    radix_node* next = mamba_lru_.prev_unlocked(x);
    if (!x->is_leaf()) {
      // Internal node: free only its slot; it becomes a tombstone (no KV event).
      free_slot(x->mamba);
      x->mamba = no_slot;
      sizes_.mamba_evictable -= 1;
      mamba_lru_.remove(x);
      ++counters_.tombstones_by_eviction;
      evicted += 1;
    } else {
      leaf_eviction ev = evict_leaf(x);
      evicted += 1;
      r.tokens_freed_total += ev.tokens;
    }
    x = next;
  }
  r.slots_freed_total += evicted;
  return evicted;
}

evict_result radix_tree::evict(std::size_t num_tokens, std::size_t mamba_num) {
  evict_result r;
  r.tokens_evicted = evict_full(num_tokens, r);
  r.mamba_evicted = evict_mamba(mamba_num, r);
  counters_.evicted_tokens += r.tokens_freed_total;
  counters_.evicted_slots += r.slots_freed_total;
  return r;
}

}  // namespace hc
