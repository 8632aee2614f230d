// demote_prefix: a caller's hint that a prompt's cached path will not be needed soon (an
// agent waiting on a tool, a conversation paused), carried out as eviction would carry it
// out on those nodes: deepest first, only what no request or pin holds and no other
// branch on the device still extends. With a host tier nothing is dropped: what has no
// backup yet is backed up first, and demoted when that backup is done.
#include <algorithm>
#include <cassert>

#include "actors/radix_cache/radix_tree.hpp"

namespace hc {
namespace {

bool held(const radix_node* x) noexcept {
  return x->full_lock_ref > 0 || x->mamba_lock_ref > 0 || x->backup_in_flight;
}

/// A predicate: the pending demotion is of node n (the same node, not a reuse of it).
auto names(const radix_node* n) {
  return [n](const auto& d) { return d.node.node == n && d.node.id == n->id; };
}

/// True if a child of x other than `going` still has its KV on the device.
bool other_device_child(const radix_node* x, const radix_node* going) noexcept {
  for (const radix_node* c : x->children)
    if (c != going && !c->evicted()) return true;
  return false;
}

}  // namespace

std::vector<radix_node*> radix_tree::device_path(namespace_id ns, std::span<const token_id> key,
                                                 std::size_t* matched) const {
  const std::size_t p = cfg_.page_size;
  key = key.first(key.size() / p * p);
  std::vector<radix_node*> path;
  const radix_node* node = root_;
  *matched = 0;
  while (!key.empty()) {
    radix_node* child = find_child(node, ns, key);
    if (!child) break;
    const std::size_t pl = key_match(child->key, key);
    *matched += pl;
    // Device nodes never hang below an evicted one: the device part is a prefix.
    if (!child->evicted()) path.push_back(child);
    if (pl < child->key.size()) break;  // the prompt ends inside it: it goes whole
    node = child;
    key = key.subspan(pl);
  }
  return path;
}

demote_report radix_tree::demote_prefix(namespace_id ns, std::span<const token_id> key) {
  demote_report r;
  std::vector<radix_node*> path = device_path(ns, key, &r.matched_tokens);
  // The nodes that can go: a suffix of the path, below the deepest one that must stay. A
  // write-through backup in flight locks its node's path until its copy is done: those
  // locks are not a reason to stay (the node goes when its backup is done), others are.
  std::size_t first = path.size();
  std::int32_t backups_below = 0;  // backups in flight at or below path[first - 1]
  while (first > 0) {
    const radix_node* x = path[first - 1];
    const radix_node* below = first < path.size() ? path[first] : nullptr;
    backups_below += x->backup_in_flight ? 1 : 0;
    const bool held_by_others =
        x->full_lock_ref > backups_below || x->mamba_lock_ref > (x->backup_locks_slot ? 1 : 0);
    if (held_by_others || other_device_child(x, below)) break;
    --first;
  }
  for (std::size_t i = 0; i < first; ++i)
    r.kept_tokens += path[i]->value.size();

  if (!host_tier_enabled()) {
    // Deepest first; a leaf's eviction may take tombstone ancestors with it (the cascade):
    // go on from the ancestor that survived, if it is still one of those that can go.
    std::size_t i = path.size();  // path[first, i) are still to go
    while (i > first) {
      radix_node* x = path[i - 1];
      assert(x->is_leaf());
      const bool had_slot = !x->is_tombstone();
      const leaf_eviction ev = evict_leaf(x);
      r.evicted_tokens += ev.tokens;
      r.slots_freed += had_slot ? 1 : 0;
      // The cascade stops at path[first - 1] at the latest (held, or not a leaf).
      std::size_t k = first;
      while (k < i - 1 && path[k] != ev.surviving_parent)
        ++k;
      if (k == i - 1) break;  // it survived above `first` (or is root): done
      i = k + 1;
    }
    counters_.evicted_tokens += r.evicted_tokens;
    counters_.evicted_slots += r.slots_freed;
    return r;
  }

  // Host tier: demote the backed-up ones at once, deepest first, while they are.
  std::size_t i = path.size();
  while (i > first && path[i - 1]->backed_up() && !path[i - 1]->backup_in_flight) {
    radix_node* x = path[i - 1];
    r.demoted_tokens += x->value.size();
    r.slots_freed += x->is_tombstone() ? 0 : 1;
    demote(x);
    --i;
  }
  counters_.evicted_tokens += r.demoted_tokens;
  counters_.evicted_slots += r.slots_freed;
  if (i == first) return r;

  // The rest wait for backups (queued now, or in flight): path[first, i) is demoted
  // deepest first as they finish.
  // Write-through's backup contiguity needs every ancestor backed up too (they stay).
  const bool contiguous = host_cfg_.policy != write_policy::write_back;
  for (std::size_t j = contiguous ? 0 : first; j < i; ++j) {
    radix_node* x = path[j];
    if (!x->backed_up() && std::none_of(backup_candidates_.begin(), backup_candidates_.end(),
                                        [x](node_ref c) { return c.node == x; }))
      backup_candidates_.push_back({x, x->id});
  }
  std::erase_if(pending_demotions_, [this](const pending_demotion& d) {
    return !valid(d.node) || d.node.node->last_access != d.last_access;
  });
  for (std::size_t j = first; j < i; ++j) {
    radix_node* x = path[j];
    r.deferred_tokens += x->value.size();
    if (!is_demotion_pending(x)) pending_demotions_.push_back({{x, x->id}, x->last_access});
  }
  if (pending_demotions_.size() > max_pending_demotions)
    pending_demotions_.erase(
        pending_demotions_.begin(),
        pending_demotions_.begin() +
            static_cast<std::ptrdiff_t>(pending_demotions_.size() - max_pending_demotions));
  return r;
}

bool radix_tree::is_demotion_pending(const radix_node* n) const {
  return std::any_of(pending_demotions_.begin(), pending_demotions_.end(), names(n));
}

void radix_tree::demote_pending_upward(radix_node* n) {
  const radix_node* below = nullptr;
  while (n != root_) {
    const auto it = std::find_if(pending_demotions_.begin(), pending_demotions_.end(), names(n));
    if (it == pending_demotions_.end()) return;
    if (!valid(it->node) || n->last_access != it->last_access || n->evicted()) {
      pending_demotions_.erase(it);  // used since (or gone): the hint is void
      return;
    }
    // Not yet: its own backup (or a child's) is still to come, and will call again.
    if (!n->backed_up() || held(n) || other_device_child(n, below)) return;
    pending_demotions_.erase(it);
    demote(n);
    below = n;
    n = n->parent;
  }
}

}  // namespace hc
