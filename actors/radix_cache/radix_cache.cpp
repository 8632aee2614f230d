#include "actors/radix_cache/radix_cache.hpp"

#include <limits>
#include <string>

namespace hc {

radix_cache::radix_cache(const cache_config& cfg, const page_hasher* hasher)
    : kv_(cfg.kv_tokens, cfg.page_size),
      slots_(cfg.slots),
      tree_(tree_config{cfg.page_size, cfg.chunk_size, cfg.enable_events, cfg.state_events}, kv_,
            slots_, hasher) {
  if (cfg.host_kv_tokens == 0) return;
  host_kv_ = std::make_unique<kv_allocator>(cfg.host_kv_tokens, cfg.page_size);
  host_slots_ = std::make_unique<slot_allocator>(cfg.host_slots);
  tree_.enable_host_tier(cfg.host_tier, *host_kv_, *host_slots_);
}

cow_match_result radix_cache::match(namespace_id ns, std::span<const token_id> key, bool cow,
                                    bool has_working_slot) {
  cow_match_result r{tree_.match(ns, key)};
  if (has_host_tier()) {
    if (r.match.best != r.match.last_node || r.match.mamba_host_hit)
      r.loaded_tokens = load_back(r.match);
    resumable_prefix(r.match);
  }
  if (!cow || r.match.last_slot == no_slot) return r;
  if (!has_working_slot) {
    slot_id s = slots_.alloc_one();
    if (s == no_slot) {
      (void)tree_.inc_lock(r.match.last_node);  // keep the COW source alive
      (void)tree_.evict(0, 1);
      s = slots_.alloc_one();
      (void)tree_.dec_lock(r.match.last_node);
    }
    if (s == no_slot) return r;  // no working slot: the caller cannot COW
    r.new_working_slot = s;
  }
  r.cow_src = r.match.last_slot;
  return r;
}

std::size_t radix_cache::load_back(match_result& m) {
  // The quota is everything the device could free: load_back still evicts only what the
  // load needs, and skips the load when eviction cannot make room.
  const auto quota = static_cast<std::int64_t>(kv_.available() + tree_.sizes().full_evictable);
  auto lb = tree_.load_back(m.best, quota);
  if (!lb || !lb->loaded) return 0;
  m.indices.insert(m.indices.end(), lb->new_indices.begin(), lb->new_indices.end());
  m.last_node = lb->last_node;
  m.last_slot = lb->slot;
  m.host_hit_length = 0;
  m.mamba_host_hit = false;
  for (tier_copy& c : lb->copies) {
    if (c.host_slot != no_slot) (void)tree_.protect_host_mamba(c.node);
    loads_.push_back(std::move(c));
  }
  return lb->new_indices.size();
}

void radix_cache::resumable_prefix(match_result& m) {
  // With a host tier the device anchor may hold KV but no device state (its state is on
  // the host and was not loaded back): a request can only resume where a state is.
  radix_node* x = m.last_node.node;
  std::size_t len = m.indices.size();
  while (x != nullptr && x->parent != nullptr && x->mamba == no_slot) {
    len -= x->value.size();
    x = x->parent;
  }
  if (x == nullptr || x == m.last_node.node) return;
  m.indices.resize(len);
  m.last_node = {x, x->id};
  m.last_slot = x->mamba;
}

std::vector<tier_copy> radix_cache::drain_loads() {
  std::vector<tier_copy> out;
  out.swap(loads_);
  return out;
}

status radix_cache::load_done(const tier_copy& c) {
  if (c.host_slot != no_slot)
    if (status s = tree_.release_host_mamba(c.node); !s) return s;
  return tree_.load_done(c.node);
}

slot_id radix_cache::alloc_slot_evicting() {
  slot_id s = slots_.alloc_one();
  if (s != no_slot) return s;
  (void)tree_.evict(0, 1);
  return slots_.alloc_one();
}

void radix_cache::ensure_free_slots(std::size_t needed) {
  const std::size_t avail = slots_.available();
  if (avail < needed) (void)tree_.evict(0, needed - avail);
}

status radix_cache::alloc_kv(std::size_t seq_len, kv_index last, std::size_t n,
                             std::vector<kv_index>& out) {
  const std::size_t p = kv_.page_size();
  const std::size_t avail = kv_.available();
  if (p == 1) {
    if (avail < n) (void)tree_.evict(n, 0);
  } else if (avail < n || avail - n < p) {  // avail < n + P, which can wrap
    (void)tree_.evict(n > std::numeric_limits<std::size_t>::max() - p ? n : n + p, 0);
  }
  if (!kv_.alloc_extend(seq_len, last, n, out))
    return {errc::out_of_memory, "KV pool: " + std::to_string(n) + " tokens requested, " +
                                     std::to_string(kv_.available()) + " available after eviction"};
  return {};
}

}  // namespace hc
