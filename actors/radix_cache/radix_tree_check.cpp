// Invariant checks (cache-semantics.md §2.3). Used by tests after every step and by
// `hcctl replay` for the trace's sanity probes. O(tree size).
#include <string>
#include <unordered_set>

#include "actors/radix_cache/radix_tree.hpp"

namespace hc {
namespace {

status violation(const std::string& what, const radix_node* n) {
  return {errc::invariant_violated, what + " (node " + std::to_string(n ? n->id : 0) + ")"};
}

}  // namespace

status radix_tree::check_invariants() const {
  const std::size_t p = cfg_.page_size;
  tree_sizes sums;
  host_sizes host_sums;
  std::size_t nodes = 0, holding = 0, device_nodes = 0, host_holding = 0;
  std::unordered_set<slot_id> seen_slots, seen_host_slots;
  // Device KV ids held so far (ids run to capacity + one page: page 0 is never handed out).
  std::vector<bool> held_kv(kv_.capacity() + cfg_.page_size + 1);
  std::vector<const radix_node*> stack{root_};
  while (!stack.empty()) {
    const radix_node* n = stack.back();
    stack.pop_back();
    for (const radix_node* c : n->children) {
      if (c->parent != n) return violation("child's parent pointer is wrong", c);
      if (n != root_ && c->ns != n->ns) return violation("namespace differs from parent", c);
      stack.push_back(c);
    }
    for (std::size_t i = 0; i < n->children.size(); ++i) {
      const radix_node* c = n->children[i];
      if (c->key.empty() || n->children.first_token(i) != c->key[0])
        return violation("child listed under another first token than its key's", c);
      if (c->child_index != i) return violation("child's position in its list is wrong", c);
      if (n->children.find(c->key[0], [c](const radix_node* x) { return x == c; }) != c)
        return violation("child not found by its first token (hash index)", c);
    }
    for (std::size_t i = 0; i < n->children.size(); ++i)
      for (std::size_t j = i + 1; j < n->children.size(); ++j) {
        const radix_node* a = n->children[i];
        const radix_node* b = n->children[j];
        if (a->ns == b->ns &&
            std::equal(a->key.begin(), a->key.begin() + static_cast<std::ptrdiff_t>(p),
                       b->key.begin()))
          return violation("two children share a child key", a);
      }
    // Index memory: a node's buffers are exactly its key and ids (a split, a demotion or
    // a pooled node leaves no unused capacity behind: BENCHMARKS.md §10.1).
    if (n->key.capacity() != n->key.size() || n->value.has_slack() ||
        n->host_value.capacity() != n->host_value.size())
      return violation("a key or id list holds unused capacity", n);
    if (n == root_) continue;
    ++nodes;
    if (n->key.empty() || n->key.size() % p != 0)
      return violation("key not a positive page multiple", n);
    if (status h = check_host_fields(n, host_sums, seen_host_slots); !h) return h;
    if (n->evicted()) continue;  // host-only: checked above
    ++device_nodes;
    if (n->key.size() != n->value.size()) return violation("key and value lengths differ", n);
    const std::vector<kv_index> ids = n->value.to_vector();
    if (n->value.run_length() != 0 && !kv_.is_whole_units(ids))
      return violation("value kept as runs is not whole pool units", n);
    if (n->mamba_lock_ref < 0 || n->full_lock_ref < n->mamba_lock_ref)
      return violation("full_lock_ref < mamba_lock_ref", n);
    if (n->parent != root_ && n->parent->full_lock_ref < n->full_lock_ref)
      return violation("parent less locked than child", n);
    // A stateless leaf is deleted at once, except while a backup or a host protection
    // holds it (it goes when that ends: backup_done / release_host).
    if (n->is_tombstone() && n->mamba_host == no_slot && n->is_leaf() && !n->backup_in_flight &&
        !n->host_protected())
      return violation("tombstone leaf", n);
    // A leaf's full locks are its own lock targets: requests (full + SSM) and at most one
    // backup in flight (full only).
    if (n->is_leaf() && !n->is_tombstone() &&
        n->full_lock_ref > n->mamba_lock_ref + (n->backup_in_flight ? 1 : 0))
      return violation("full-locked leaf without mamba lock", n);
    if (!n->in_full_lru) return violation("node missing from full LRU", n);
    if (n->in_mamba_lru == n->is_tombstone()) return violation("mamba LRU membership wrong", n);
    (n->full_lock_ref > 0 ? sums.full_protected : sums.full_evictable) += n->value.size();
    for (kv_index k : ids) {
      if (k <= 0 || static_cast<std::size_t>(k) >= held_kv.size())
        return violation("tree holds an out-of-range KV index " + std::to_string(k), n);
      if (kv_.is_free(k)) return violation("tree holds a free KV index " + std::to_string(k), n);
      if (held_kv[static_cast<std::size_t>(k)])
        return violation("KV index " + std::to_string(k) + " held by two nodes", n);
      held_kv[static_cast<std::size_t>(k)] = true;
    }
    if (!n->is_tombstone()) {
      ++holding;
      (n->mamba_lock_ref > 0 ? sums.mamba_protected : sums.mamba_evictable) += 1;
      if (slots_.is_free(n->mamba)) return violation("tree holds a free slot", n);
      if (!seen_slots.insert(n->mamba).second) return violation("slot held by two nodes", n);
    }
  }
  if (sums.full_evictable != sizes_.full_evictable || sums.full_protected != sizes_.full_protected)
    return violation("full evictable/protected totals disagree with the nodes", root_);
  if (sums.mamba_evictable != sizes_.mamba_evictable ||
      sums.mamba_protected != sizes_.mamba_protected)
    return violation("mamba evictable/protected totals disagree with the nodes", root_);
  if (full_lru_.size() != device_nodes)
    return violation("full LRU size != device node count", root_);
  if (host_sums.tokens != host_sizes_.tokens || host_sums.slots != host_sizes_.slots ||
      host_sums.evicted_nodes != host_sizes_.evicted_nodes)
    return violation("host totals disagree with the nodes", root_);
  if (host_mamba_lru_.size() != host_sums.slots)
    return violation("host-mamba LRU size != host-holding nodes", root_);
  (void)host_holding;
  if (mamba_lru_.size() != holding) return violation("mamba LRU size != holding nodes", root_);
  if (nodes + 1 != live_nodes_) return violation("live node count drifted", root_);
  for (const radix_node* f : free_nodes_)
    if (f->key.capacity() != 0 || f->value.holds_storage() || f->host_value.capacity() != 0 ||
        f->hashes.capacity() != 0)
      return violation("a released node keeps its buffers", f);
  return {};
}

status radix_tree::check_host_fields(const radix_node* n, host_sizes& sums,
                                     std::unordered_set<slot_id>& seen) const {
  if (n->host_lock_ref < 0 || n->mamba_host_lock_ref < 0)
    return violation("negative host protection count", n);
  if (n->backed_up()) {
    if (!host_kv_) return violation("host ids without a host tier", n);
    if (n->host_value.size() != n->key.size())
      return violation("key and host value lengths differ", n);
    for (kv_index k : n->host_value)
      if (host_kv_->is_free(k)) return violation("tree holds a free host KV index", n);
    sums.tokens += n->host_value.size();
  }
  if (n->mamba_host != no_slot) {
    if (!host_slots_ || host_slots_->is_free(n->mamba_host))
      return violation("tree holds a free host slot", n);
    if (!seen.insert(n->mamba_host).second) return violation("host slot held by two nodes", n);
    if (!n->in_host_mamba_lru) return violation("host slot holder missing from its LRU", n);
    ++sums.slots;
  } else if (n->in_host_mamba_lru) {
    return violation("host-mamba LRU holds a node without a host slot", n);
  }
  if (n->evicted()) {
    ++sums.evicted_nodes;
    if (!n->backed_up()) return violation("evicted node without a backup", n);
    if (n->mamba != no_slot || n->in_full_lru || n->in_mamba_lru)
      return violation("evicted node still in a device list or holding a device slot", n);
    if (n->full_lock_ref != 0 || n->mamba_lock_ref != 0)
      return violation("evicted node is locked", n);
    for (const radix_node* c : n->children)
      if (!c->evicted()) return violation("evicted node with a device child", c);
  }
  return {};
}

status radix_tree::sanity_check() const {
  if (status s = check_invariants(); !s) return s;
  std::vector<const radix_node*> stack{root_};
  while (!stack.empty()) {
    const radix_node* n = stack.back();
    stack.pop_back();
    if (n != root_ && (n->host_protected() || n->backup_in_flight))
      return violation("idle node host-protected or with a backup in flight", n);
    stack.insert(stack.end(), n->children.begin(), n->children.end());
  }
  if (sizes_.full_protected != 0 || sizes_.mamba_protected != 0)
    return violation("idle tree has protected entries", root_);
  std::uint64_t prev = UINT64_MAX;
  for (radix_node* x = full_lru_.first(); x; x = full_lru_.after(x)) {
    if (x->full_lock_ref != 0 || x->mamba_lock_ref != 0) return violation("idle node locked", x);
    if (x->last_access > prev) return violation("full LRU out of access-time order", x);
    prev = x->last_access;
  }
  prev = UINT64_MAX;
  for (radix_node* x = mamba_lru_.first(); x; x = mamba_lru_.after(x)) {
    if (x->last_access > prev) return violation("mamba LRU out of access-time order", x);
    prev = x->last_access;
  }
  return {};
}

}  // namespace hc
