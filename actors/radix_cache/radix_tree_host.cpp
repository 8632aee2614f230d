// The host tier of the tree (cache-semantics.md §5.2-§5.3, HiMambaRadixCache / Unified):
// backups with the write policies and backup contiguity, host eviction, host protection
// and load-back. Ids only: every byte move is returned as a tier_copy for the data plane.
#include <algorithm>
#include <cassert>
#include <queue>
#include <string>
#include <utility>

#include "actors/common/invariant.hpp"
#include "actors/radix_cache/radix_tree.hpp"

namespace hc {

void radix_tree::enable_host_tier(const host_tier_config& cfg, kv_allocator& host_kv,
                                  slot_allocator& host_slots) {
  assert(root_->children.empty() && "enable_host_tier on a non-empty tree");
  assert(host_kv.page_size() == cfg_.page_size);
  host_cfg_ = cfg;
  if (host_cfg_.write_through_threshold == 0)
    host_cfg_.write_through_threshold =
        host_cfg_.policy == write_policy::write_through_selective ? 2 : 1;
  host_kv_ = &host_kv;
  host_slots_ = &host_slots;
}

void radix_tree::free_host_kv(std::span<const kv_index> ids) {
  if (ids.empty()) return;
  host_sizes_.tokens -= ids.size();
  must(host_kv_->free(ids), "tree freed a host KV index it does not own");
}

void radix_tree::free_host_slot(radix_node* n) {
  if (n->mamba_host == no_slot) return;
  must(host_slots_->free_one(n->mamba_host), "tree freed a host slot it does not own");
  n->mamba_host = no_slot;
  --host_sizes_.slots;
  host_mamba_lru_.remove(n);
}

bool radix_tree::is_h_leaf(const radix_node* n) const noexcept {
  return n != root_ && n->evicted() && n->backed_up() && n->is_leaf() && !n->host_protected() &&
         !n->backup_in_flight;
}

void radix_tree::count_insert_hit(radix_node* n) {
  if (!host_tier_enabled() || host_cfg_.policy == write_policy::write_back) return;
  ++n->hit_count;
  if (!n->backed_up() && !n->backup_in_flight && n->hit_count == host_cfg_.write_through_threshold)
    backup_candidates_.push_back({n, n->id});
}

std::vector<node_ref> radix_tree::take_backup_candidates() {
  std::vector<node_ref> out;
  out.swap(backup_candidates_);
  std::erase_if(out, [this](node_ref r) { return !valid(r) || r.node->backed_up(); });
  return out;
}

std::vector<tier_copy> radix_tree::drain_copies() {
  std::vector<tier_copy> out;
  out.swap(copies_);
  return out;
}

status radix_tree::demotion_done(const tier_copy& c) {
  if (c.host_slot != no_slot)
    if (status s = release_host_mamba(c.node); !s) return s;
  return release_host(c.node);
}

result<tier_copy> radix_tree::backup_node(radix_node* n, bool lock_until_done) {
  const std::size_t len = n->key.size();
  std::vector<kv_index> host_ids;
  if (!host_kv_->alloc_extend(0, 0, len, host_ids)) {
    (void)evict_host(len);
    if (!host_kv_->alloc_extend(0, 0, len, host_ids))
      return error{errc::out_of_memory, "host KV pool: " + std::to_string(len) +
                                            " tokens needed, " +
                                            std::to_string(host_kv_->available()) + " free"};
  }
  slot_id hs = no_slot;
  if (!n->is_tombstone() && n->mamba_host == no_slot) {
    hs = host_slots_->alloc_one();
    if (hs == no_slot) {
      (void)evict_mamba_host(1);
      hs = host_slots_->alloc_one();
    }
    if (hs == no_slot) {  // all or nothing
      must(host_kv_->free(host_ids), "freed KV ids that were allocated");
      return error{errc::out_of_memory, "host SSM pool: no free slot"};
    }
  }
  tier_copy c;
  c.dir = tier_copy::direction::device_to_host;
  c.node = {n, n->id};
  c.device_kv = n->value.to_vector();
  c.host_kv = host_ids;
  host_ids.shrink_to_fit();  // the allocator's list may have grown past it
  n->host_value = std::move(host_ids);
  host_sizes_.tokens += len;
  if (hs != no_slot) {
    n->mamba_host = hs;
    host_mamba_lru_.insert_mru(n);
    ++host_sizes_.slots;
    c.device_slot = n->mamba;
    c.host_slot = hs;
  }
  counters_.backed_up_tokens += len;
  if (lock_until_done) {
    lock_path(n);
    n->backup_in_flight = true;
    if (c.device_slot != no_slot) {
      if (n->mamba_lock_ref++ == 0) {
        sizes_.mamba_evictable -= 1;
        sizes_.mamba_protected += 1;
      }
      n->backup_locks_slot = true;
    }
  }
  return c;
}

result<tier_copy> radix_tree::write_backup(node_ref ref) {
  if (!host_tier_enabled()) return error{errc::invalid_config, "backup: no host tier"};
  if (!valid(ref) || ref.node == root_) return error{errc::not_found, "backup: stale node"};
  radix_node* n = ref.node;
  if (n->backed_up()) return error{errc::invalid_argument, "backup: node already backed up"};
  if (n->evicted()) return error{errc::invalid_argument, "backup: node has no device KV"};
  const bool through = host_cfg_.policy != write_policy::write_back;
  if (through && n->parent != root_ && !n->parent->backed_up())
    return error{errc::invalid_argument,
                 "backup: parent is not backed up (backup contiguity, write-through)"};
  return backup_node(n, through || is_demotion_pending(n));
}

status radix_tree::backup_done(node_ref ref) {
  if (!valid(ref)) return {errc::not_found, "backup_done: stale node"};
  if (!ref.node->backup_in_flight)
    return {errc::invalid_argument, "backup_done: no backup in flight"};
  radix_node* n = ref.node;
  n->backup_in_flight = false;
  if (std::exchange(n->backup_locks_slot, false) && --n->mamba_lock_ref == 0) {
    sizes_.mamba_protected -= 1;
    sizes_.mamba_evictable += 1;
  }
  unlock_path(n);
  drop_if_stateless_leaf(ref.node);
  if (valid(ref) && !pending_demotions_.empty()) demote_pending_upward(ref.node);
  return {};
}

void radix_tree::drop_if_stateless_leaf(radix_node* n) {
  radix_node* stop = nullptr;
  if (n != root_ && n->is_leaf()) (void)cascade_delete(n, &stop);
}

std::size_t radix_tree::evict_host(std::size_t num_tokens) {
  if (!host_tier_enabled() || num_tokens == 0) return 0;
  auto older = [](const radix_node* a, const radix_node* b) {
    return a->last_access > b->last_access;  // min-heap on access time
  };
  std::priority_queue<radix_node*, std::vector<radix_node*>, decltype(older)> heap(older);
  std::vector<radix_node*> stack{root_};
  while (!stack.empty()) {
    radix_node* n = stack.back();
    stack.pop_back();
    if (is_h_leaf(n)) heap.push(n);
    for (radix_node* c : n->children)
      stack.push_back(c);
  }
  std::size_t freed = 0;
  while (freed < num_tokens && !heap.empty()) {
    radix_node* x = heap.top();
    heap.pop();
    if (!is_h_leaf(x)) continue;
    freed += x->host_value.size();
    radix_node* parent = x->parent;
    delete_node(x);
    const std::size_t before = host_sizes_.tokens;
    radix_node* stop = nullptr;
    (void)cascade_delete(parent, &stop);
    freed += before - host_sizes_.tokens;
    if (is_h_leaf(stop)) heap.push(stop);
  }
  return freed;
}

std::size_t radix_tree::evict_mamba_host(std::size_t n) {
  if (!host_tier_enabled()) return 0;
  std::size_t freed = 0;
  radix_node* x = host_mamba_lru_.lru_unlocked();
  while (freed < n && x != nullptr) {
    radix_node* next = host_mamba_lru_.prev_unlocked(x);
    if (is_h_leaf(x)) {
      radix_node* parent = x->parent;
      delete_node(x);
      radix_node* stop = nullptr;
      (void)cascade_delete(parent, &stop);
      // The cascade may have removed `next` only if it was an ancestor of x; ancestors
      // in this list hold a host slot, which stops the cascade, so next is intact.
    } else {
      free_host_slot(x);
      ++counters_.host_evicted_slots;
      drop_if_stateless_leaf(x);  // a leaf left without any state goes
    }
    ++freed;
    x = next;
  }
  return freed;
}

status radix_tree::adjust_host_hold(node_ref ref, std::int32_t radix_node::*counter, int delta,
                                    const char* what) {
  if (!valid(ref)) return {errc::not_found, std::string(what) + ": stale node"};
  if (ref.node == root_) return {};
  std::int32_t& c = ref.node->*counter;
  if (delta < 0 && c <= 0) return {errc::invalid_argument, std::string(what) + ": not protected"};
  c += delta;
  if (delta < 0) drop_if_stateless_leaf(ref.node);  // nothing holds it any more
  return {};
}

status radix_tree::protect_host(node_ref ref) {
  return adjust_host_hold(ref, &radix_node::host_lock_ref, +1, "protect_host");
}
status radix_tree::release_host(node_ref ref) {
  return adjust_host_hold(ref, &radix_node::host_lock_ref, -1, "release_host");
}
status radix_tree::protect_host_mamba(node_ref ref) {
  return adjust_host_hold(ref, &radix_node::mamba_host_lock_ref, +1, "protect_host_mamba");
}
status radix_tree::release_host_mamba(node_ref ref) {
  return adjust_host_hold(ref, &radix_node::mamba_host_lock_ref, -1, "release_host_mamba");
}

result<load_back_result> radix_tree::load_back(node_ref best, std::int64_t mem_quota) {
  if (!host_tier_enabled()) return error{errc::invalid_config, "load_back: no host tier"};
  if (!valid(best)) return error{errc::not_found, "load_back: stale node"};
  radix_node* end = best.node;
  std::vector<radix_node*> path;  // evicted nodes, bottom-up
  radix_node* anchor = end;
  std::size_t kv = 0;
  while (anchor != root_ && anchor->evicted()) {
    path.push_back(anchor);
    kv += anchor->key.size();
    anchor = anchor->parent;
  }
  const bool need_state = end != root_ && end->mamba == no_slot && end->mamba_host != no_slot;
  load_back_result r;
  r.last_node = {anchor, anchor->id};
  r.slot = anchor->mamba;
  if (kv == 0 && !need_state) {
    r.last_node = best;
    r.slot = end->mamba;
    return r;
  }
  // Lock the anchor while ids are taken (eviction must not free the path above it); the
  // quota is reduced by what the lock takes from the evictable size (SGLang's delta).
  const std::size_t evictable_before = sizes_.full_evictable;
  (void)inc_lock(r.last_node);
  const auto delta = static_cast<std::int64_t>(evictable_before - sizes_.full_evictable);
  if ((kv < host_cfg_.load_back_threshold && !need_state) ||
      static_cast<std::int64_t>(kv) > mem_quota - delta) {
    (void)dec_lock(r.last_node);
    return r;
  }
  std::vector<kv_index> ids;
  if (kv > 0 && !kv_.alloc_extend(0, 0, kv, ids)) {
    (void)evict(kv, 0);
    if (!kv_.alloc_extend(0, 0, kv, ids)) {
      (void)dec_lock(r.last_node);
      return r;
    }
  }
  slot_id slot = no_slot;
  if (need_state) {
    slot = slots_.alloc_one();
    if (slot == no_slot) {
      (void)evict(0, 1);
      slot = slots_.alloc_one();
    }
    if (slot == no_slot) {
      free_kv(ids);
      (void)dec_lock(r.last_node);
      return r;
    }
  }
  (void)dec_lock(r.last_node);
  // Nothing can be evicted from here on: hand the ids to the path, top-down.
  tier_copy c;
  c.dir = tier_copy::direction::host_to_device;
  c.node = best;
  std::size_t off = 0;
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    radix_node* n = *it;
    const auto len = static_cast<std::ptrdiff_t>(n->key.size());
    set_value(n, std::span<const kv_index>(ids).subspan(off, static_cast<std::size_t>(len)));
    off += n->key.size();
    n->value.append_to(c.device_kv);
    c.host_kv.insert(c.host_kv.end(), n->host_value.begin(), n->host_value.end());
    record_restored(n);
    full_lru_.insert_mru(n);
    sizes_.full_evictable += n->value.size();
    --host_sizes_.evicted_nodes;
  }
  if (need_state) {
    end->mamba = slot;
    record_state(end, true);
    mamba_lru_.insert_mru(end);
    sizes_.mamba_evictable += 1;
    c.device_slot = slot;
    c.host_slot = end->mamba_host;
  }
  counters_.loaded_back_tokens += kv;
  (void)inc_lock(best);
  r.loaded = true;
  r.new_indices = std::move(ids);
  r.last_node = best;
  r.slot = end->mamba;
  r.copies.push_back(std::move(c));
  return r;
}

status radix_tree::load_done(node_ref ref) {
  return dec_lock(ref);
}

result<host_insert_result> radix_tree::insert_host_only(namespace_id ns, node_ref anchor,
                                                        std::span<const token_id> key,
                                                        std::span<const kv_index> host_ids,
                                                        slot_id host_slot) {
  if (!host_tier_enabled()) return error{errc::invalid_config, "insert_host_only: no host tier"};
  if (!valid(anchor)) return error{errc::not_found, "insert_host_only: stale anchor"};
  if (key.size() != host_ids.size() || key.size() % cfg_.page_size != 0)
    return error{errc::invalid_argument,
                 "insert_host_only: key and ids must be equal page multiples"};
  host_insert_result r;
  radix_node* node = anchor.node;
  if (node != root_) ns = node->ns;
  while (!key.empty()) {
    radix_node* child = find_child(node, ns, key);
    if (!child) break;
    const std::size_t pl = key_match(child->key, key);
    if (pl < child->key.size()) child = split(child, pl);
    free_host_kv_unowned(host_ids.first(pl));
    r.already_present += pl;
    key = key.subspan(pl);
    host_ids = host_ids.subspan(pl);
    node = child;
  }
  if (key.empty()) return r;
  radix_node* leaf = new_node();
  leaf->parent = node;
  leaf->ns = ns;
  leaf->key.assign(key.begin(), key.end());
  leaf->host_value.assign(host_ids.begin(), host_ids.end());
  node->children.push_back(leaf);
  host_sizes_.tokens += leaf->host_value.size();
  ++host_sizes_.evicted_nodes;
  if (host_slot != no_slot) {
    leaf->mamba_host = host_slot;
    host_mamba_lru_.insert_mru(leaf);
    ++host_sizes_.slots;
  }
  r.new_leaf = true;
  return r;
}

void radix_tree::free_host_kv_unowned(std::span<const kv_index> ids) {
  if (ids.empty()) return;
  must(host_kv_->free(ids), "caller's host ids were not allocated");
}

}  // namespace hc
