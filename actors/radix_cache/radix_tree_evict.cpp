// Device eviction (cache-semantics.md §3.5, and §5.2 with a host tier). The walk order
// reproduces MambaRadixCache exactly, because the traces check which nodes go and in which
// order ids return to the pools.
#include <cassert>

#include "actors/radix_cache/radix_tree.hpp"

namespace hc {

void radix_tree::delete_leaf(radix_node* x) {
  remove_child(x->parent, x);
  release_node(x);
}

std::size_t radix_tree::delete_node(radix_node* n) {
  assert(n != root_ && n->is_leaf());
  const std::size_t tokens = n->value.size();
  if (!n->is_tombstone()) record_state(n, false);  // the checkpoint goes before its page
  if (!n->evicted()) record_remove(n);
  free_node_kv(n);
  if (n->in_full_lru) {
    (n->full_lock_ref > 0 ? sizes_.full_protected : sizes_.full_evictable) -= tokens;
    full_lru_.remove(n);
  } else if (n->evicted()) {
    --host_sizes_.evicted_nodes;
  }
  if (!n->is_tombstone()) {
    free_slot(n->mamba);
    (n->mamba_lock_ref > 0 ? sizes_.mamba_protected : sizes_.mamba_evictable) -= 1;
    mamba_lru_.remove(n);
  }
  counters_.host_evicted_tokens += n->host_value.size();
  if (n->mamba_host != no_slot) ++counters_.host_evicted_slots;
  free_host_kv(n->host_value);
  free_host_slot(n);
  delete_leaf(n);
  return tokens;
}

std::size_t radix_tree::cascade_delete(radix_node* parent, radix_node** stop) {
  std::size_t tokens = 0;
  while (parent != root_ && parent->is_leaf() && parent->is_tombstone() &&
         parent->mamba_host == no_slot && parent->full_lock_ref == 0 && !parent->host_protected() &&
         !parent->backup_in_flight) {
    assert(parent->mamba_lock_ref == 0);
    radix_node* up = parent->parent;
    tokens += delete_node(parent);
    parent = up;
  }
  *stop = parent;
  return tokens;
}

// Frees a leaf's KV and slot (and host copies), removes it, then deletes its ancestors
// that became childless tombstones (stopping at root, locked and host-held nodes).
radix_tree::leaf_eviction radix_tree::evict_leaf(radix_node* x) {
  assert(x->full_lock_ref == 0 && x->mamba_lock_ref == 0 && x->is_leaf());
  leaf_eviction ev{};
  radix_node* parent = x->parent;
  ev.tokens = delete_node(x);
  ev.tokens += cascade_delete(parent, &ev.surviving_parent);
  return ev;
}

void radix_tree::demote(radix_node* n) {
  assert(n->backed_up() && !n->evicted() && n->full_lock_ref == 0);
  if (!n->is_tombstone()) record_state(n, false);
  record_remove(n);
  free_node_kv(n);
  sizes_.full_evictable -= n->value.size();
  counters_.demoted_tokens += n->value.size();
  n->value.release();  // gone from the device: its storage too
  full_lru_.remove(n);
  if (!n->is_tombstone()) {
    free_slot(n->mamba);
    n->mamba = no_slot;
    sizes_.mamba_evictable -= 1;
    mamba_lru_.remove(n);
  }
  ++host_sizes_.evicted_nodes;
}

// One D-leaf leaves the device (§5.2): demoted if backed up (write_back backs it up
// first), deleted otherwise. Returns the device tokens freed; 0 and *kept if the node had
// to stay (write_back backup failed, or evicted children without a backup).
std::size_t radix_tree::evict_device_leaf(radix_node* x, radix_node** surviving, bool* kept) {
  *kept = false;
  if (host_tier_enabled() && !x->backed_up() && host_cfg_.policy == write_policy::write_back) {
    auto copy = backup_node(x, /*lock_until_done=*/false);
    if (copy) {  // queued before the ids are reused; host-held until demotion_done()
      ++x->host_lock_ref;
      if (copy->host_slot != no_slot) ++x->mamba_host_lock_ref;
      copies_.push_back(std::move(*copy));
    }
  }
  if (x->backed_up()) {
    const std::size_t tokens = x->value.size();
    demote(x);
    *surviving = x->parent;
    return tokens;
  }
  if (!x->is_leaf()) {  // evicted children but no backup: cannot go (write_back failure)
    *kept = true;
    return 0;
  }
  leaf_eviction ev = evict_leaf(x);
  *surviving = ev.surviving_parent;
  return ev.tokens;
}

std::size_t radix_tree::evict_full(std::size_t n, evict_result& r) {
  std::size_t evicted = 0;
  if (n == 0) return 0;
  radix_node* x = full_lru_.lru_unlocked_leaf();
  while (evicted < n && x != nullptr) {
    radix_node* next = full_lru_.prev_unlocked_leaf(x);
    radix_node* surviving = nullptr;
    bool kept = false;
    const bool had_slot = !x->is_tombstone();
    evicted += evict_device_leaf(x, &surviving, &kept);
    if (!kept) {
      r.slots_freed_total += had_slot ? 1 : 0;
      // If the surviving ancestor became a D-leaf it may be the least recent one: restart.
      if (surviving != root_ && !surviving->has_device_child())
        next = full_lru_.lru_unlocked_leaf();
    }
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
    bool kept = true;
    if (!x->has_device_child() && x->full_lock_ref == 0) {
      radix_node* surviving = nullptr;
      r.tokens_freed_total += evict_device_leaf(x, &surviving, &kept);
    }
    if (kept) {
      // Internal node (or a leaf that must stay): free only its slot; it becomes a
      // tombstone (no KV event; a state event with state_events).
      record_state(x, false);
      free_slot(x->mamba);
      x->mamba = no_slot;
      sizes_.mamba_evictable -= 1;
      mamba_lru_.remove(x);
      ++counters_.tombstones_by_eviction;
    }
    evicted += 1;
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
