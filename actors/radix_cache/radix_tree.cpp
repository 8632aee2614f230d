#include "actors/radix_cache/radix_tree.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <string>

#include "actors/common/invariant.hpp"

namespace hc {

radix_tree::radix_tree(tree_config cfg, kv_allocator& kv, slot_allocator& slots,
                       const page_hasher* hasher)
    : cfg_(cfg), kv_(kv), slots_(slots), hasher_(hasher) {
  if (cfg_.page_size == 0) cfg_.page_size = 1;
  if (!hasher_) cfg_.enable_events = false;
  root_ = new_node();
  root_->full_lock_ref = 1;
  root_->mamba_lock_ref = 1;
  root_->last_access = tick();
}

radix_tree::~radix_tree() = default;

radix_node* radix_tree::new_node() {
  radix_node* n;
  if (!free_nodes_.empty()) {
    n = free_nodes_.back();
    free_nodes_.pop_back();
  } else {
    n = storage_.emplace_back(std::make_unique<radix_node>()).get();
  }
  n->id = next_id_++;
  n->last_access = tick();
  ++live_nodes_;
  return n;
}

void radix_tree::release_node(radix_node* n) {
  n->parent = nullptr;
  n->children.clear();
  // A pooled node keeps no buffers: the next user may need other sizes, and what a
  // released node held is not index memory.
  release(n->key);
  n->value.release();
  release(n->hashes);
  n->mamba = no_slot;
  n->ns = 0;
  n->full_lock_ref = n->mamba_lock_ref = 0;
  release(n->host_value);
  n->mamba_host = no_slot;
  n->host_lock_ref = n->mamba_host_lock_ref = 0;
  n->hit_count = 0;
  n->backup_in_flight = false;
  n->backup_locks_slot = false;
  n->writers.clear();
  n->id = 0;
  --live_nodes_;
  free_nodes_.push_back(n);
}

radix_node* radix_tree::find_child(const radix_node* n, namespace_id ns,
                                   std::span<const token_id> key) const noexcept {
  const std::size_t p = cfg_.page_size;
  if (key.size() < p) return nullptr;
  return n->children.find(key[0], [&](const radix_node* c) {
    return c->ns == ns &&
           (p == 1 || std::memcmp(c->key.data(), key.data(), p * sizeof(token_id)) == 0);
  });
}

void radix_tree::remove_child(radix_node* parent, radix_node* child) {
  parent->children.remove(child);  // asserts that child is listed
}

namespace {
/// Index of the first token where a and b differ, or n: 16 tokens (64 bytes) per step with
/// no branch inside the step (the compiler vectorises the OR of the differences).
std::size_t first_difference(const token_id* a, const token_id* b, std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    std::uint32_t diff = 0;
    for (std::size_t j = 0; j < 16; ++j)
      diff |= static_cast<std::uint32_t>(a[i + j] ^ b[i + j]);
    if (diff != 0) break;
  }
  while (i < n && a[i] == b[i])
    ++i;
  return i;
}

/// Prefetches one line of every 4 KiB page of base[fetched, until), then fetched = until
/// (or the first byte of the page after it).
void touch_pages(const char* base, std::size_t& fetched, std::size_t until) noexcept {
  constexpr std::uintptr_t page_bytes = 4096;
  while (fetched < until) {
    __builtin_prefetch(base + fetched);
    const auto at = reinterpret_cast<std::uintptr_t>(base + fetched);
    fetched += page_bytes - at % page_bytes;  // to the next page's first byte
  }
}
}  // namespace

std::size_t radix_tree::key_match(std::span<const token_id> a,
                                  std::span<const token_id> b) const noexcept {
  const std::size_t n = std::min(a.size(), b.size());
  // memcmp over blocks that double from 256 tokens (1 KiB) while they agree: a node's key
  // usually agrees to its end, which then costs one call for a short node and a handful for
  // a long one, each streaming at memory speed (memcmp stops at a difference, so a long
  // block costs no more than the bytes before it). In the block that differs, the
  // difference is found by a vectorised scan of that block alone.
  //
  // Before each block, every 4 KiB page of a and b up to the end of the next block is
  // touched by a prefetch (the node's key comes from DRAM in a large tree; the query may
  // too). The hardware streamer stops at each page and waits for its address translation;
  // asking for one line of each page ahead has the pages' walks and first lines in flight
  // together — as fast as prefetching every line (scratch runs), and nothing to pay when
  // the keys are in cache: a 10 M-token tree's match 10-20 % faster, a 10 K one unchanged
  // (BENCHMARKS.md §2.2.4). What is fetched and not compared is at most a line of each page
  // of the next block.
  const auto* base_a = reinterpret_cast<const char*>(a.data());
  const auto* base_b = reinterpret_cast<const char*>(b.data());
  std::size_t fetched_a = 0;  // bytes of a and of b whose pages have been touched
  std::size_t fetched_b = 0;
  std::size_t i = 0;
  std::size_t block = 256;
  while (i < n) {
    const std::size_t len = std::min(block, n - i);
    const std::size_t ahead = std::min(n, i + 3 * len) * sizeof(token_id);
    touch_pages(base_a, fetched_a, ahead);
    touch_pages(base_b, fetched_b, ahead);
    if (std::memcmp(a.data() + i, b.data() + i, len * sizeof(token_id)) != 0) {
      i += first_difference(a.data() + i, b.data() + i, len);
      break;
    }
    i += len;
    block *= 2;
  }
  return i / cfg_.page_size * cfg_.page_size;
}

// §3.2: new parent N takes child.key[:at]; the child keeps the tail, its slot and locks.
radix_node* radix_tree::split(radix_node* child, std::size_t at) {
  radix_node* n = new_node();
  radix_node* parent = child->parent;
  n->parent = parent;
  n->ns = child->ns;
  n->full_lock_ref = child->full_lock_ref;
  n->mamba_lock_ref = 0;
  n->hit_count = child->hit_count;
  n->writers = child->writers;  // both halves were written by the same forwards
  n->key.assign(child->key.begin(), child->key.begin() + static_cast<std::ptrdiff_t>(at));
  const bool evicted = child->evicted();
  if (!evicted) n->value = child->value.split_front(at);  // runs stay runs on both sides
  if (child->backed_up()) {  // the host SSM state stays on the child (§5.5)
    n->host_value.assign(child->host_value.begin(),
                         child->host_value.begin() + static_cast<std::ptrdiff_t>(at));
    drop_front(child->host_value, at);
  }
  if (!child->hashes.empty()) {
    const std::size_t pages = at / cfg_.page_size;
    n->hashes.assign(child->hashes.begin(),
                     child->hashes.begin() + static_cast<std::ptrdiff_t>(pages));
    drop_front(child->hashes, pages);
  }
  child->last_access = tick();
  if (child->in_full_lru) full_lru_.remove(child);
  if (child->in_mamba_lru) mamba_lru_.remove(child);
  drop_front(child->key, at);
  // Replace child by n in the parent's table, then hang child below n.
  parent->children.replace(child, n);
  child->parent = n;
  n->children.push_back(child);
  // Parent first so that the child is more recent than its new parent.
  if (!evicted) {
    full_lru_.insert_mru(n);
    full_lru_.insert_mru(child);
  } else {
    ++host_sizes_.evicted_nodes;
  }
  if (!child->is_tombstone()) mamba_lru_.insert_mru(child);
  ++counters_.tombstones_by_split;
  return n;
}

namespace {
/// A node where a request can resume: it holds an SSM state on the device or the host.
bool holds_state(const radix_node* n) noexcept {
  return n->mamba != no_slot || n->mamba_host != no_slot;
}
}  // namespace

match_result radix_tree::match(namespace_id ns, std::span<const token_id> key, match_ids ids) {
  const std::size_t p = cfg_.page_size;
  key = key.first(key.size() / p * p);
  if (key.empty()) return empty_match();

  // Walk (through evicted nodes too: they are all backed up), remembering the matched node
  // chunks; best = deepest node holding a state (device or host).
  radix_node* node = root_;
  radix_node* best = root_;
  std::size_t total = 0;
  std::size_t chunks = 0, best_chunks = 0;
  while (!key.empty()) {
    radix_node* child = find_child(node, ns, key);
    if (!child) break;
    if (holds_state(node)) {
      best = node;
      best_chunks = chunks;
    }
    const std::size_t pl = key_match(child->key, key);
    if (pl < child->key.size()) {
      node = split(child, pl);
      total += pl;
      ++chunks;
      break;
    }
    node = child;
    total += pl;
    ++chunks;
    key = key.subspan(pl);
  }
  if (holds_state(node)) {
    best = node;
    best_chunks = chunks;
  }
  match_result r;
  finish_match(best, total, chunks > best_chunks, r, ids == match_ids::collect, nullptr, 0);
  return r;
}

inserted_match radix_tree::match_inserted(const insert_result& ins, std::span<kv_index> out,
                                          std::size_t from) {
  radix_node* end = ins.node.node;
  assert(valid(ins.node));
  inserted_match m;
  if (end == root_) {
    m.match = empty_match();
    return m;
  }
  // The walk match() would take ends at `end` (insert splits where the key ends), so its
  // best is the deepest node of root..end holding a state, and it went deeper than best
  // if best is not `end`.
  std::size_t total = 0;
  radix_node* best = nullptr;
  for (radix_node* x = end; x != root_; x = x->parent) {
    total += x->key.size();
    if (!best && holds_state(x)) best = x;
  }
  if (!best) best = root_;
  m.prefix_len = finish_match(best, total, best != end, m.match, true, out.data(), from);
  assert(m.prefix_len <= out.size());
  return m;
}

match_result radix_tree::empty_match() const {
  match_result r;
  r.last_node = root();
  r.best = root();
  r.last_host_node = root();
  return r;
}

std::size_t radix_tree::finish_match(radix_node* best, std::size_t total, bool deeper_than_best,
                                     match_result& r, bool collect, kv_index* out,
                                     std::size_t from) {
  // Refresh recency: best most recent, ancestors progressively less recent.
  full_lru_.reset_node_and_parents_mru(best, root_);
  mamba_lru_.reset_node_and_parents_mru(best, root_);
  host_mamba_lru_.reset_node_and_parents_mru(best, root_);
  std::uint64_t t = tick();
  for (radix_node* x = best; x != nullptr; x = x->parent)
    x->last_access = t--;

  // The device anchor: best walked up while evicted (§5.3); without a host tier, best.
  radix_node* device = best;
  while (device != root_ && device->evicted()) {
    r.host_hit_length += device->key.size();
    device = device->parent;
  }
  radix_node* host = best;
  while (host != root_ && !host->backed_up())
    host = host->parent;

  // Collect the device indices of root..device: one pass up for the path, one copy of
  // each node's ids in key order into storage reserved once (no zero-fill of the result)
  // — or, given `out`, only the ids from position `from` on, into out at their positions.
  path_.clear();
  std::size_t device_tokens = 0;
  for (radix_node* x = device; x != root_; x = x->parent) {
    path_.push_back(x);
    device_tokens += x->value.size();
  }
  if (!collect) {
    // The lengths only: the walk up above already summed them.
  } else if (out == nullptr) {
    r.indices.reserve(device_tokens);
    for (auto it = path_.rbegin(); it != path_.rend(); ++it)
      (*it)->value.append_to(r.indices);
  } else {
    std::size_t at = device_tokens;  // position of the node's first id, walking up
    for (radix_node* x : path_) {
      const std::size_t n = x->value.size();
      at -= n;
      if (at + n <= from) break;  // this node and its ancestors lie before `from`
      const std::size_t skip = from > at ? from - at : 0;
      x->value.copy_to(out + at + skip, skip);
    }
  }
  r.last_node = {device, device->id};
  r.last_slot = device->mamba;
  r.best = {best, best->id};
  r.last_host_node = {host, host->id};
  r.mamba_host_hit = best != root_ && best->mamba == no_slot && best->mamba_host != no_slot;
  r.kv_matched = total;
  r.prefix_len = device_tokens;
  // Branching lengths are disabled under HiCache (§5.3, Unified).
  if (deeper_than_best && !host_tier_enabled()) {
    const std::size_t c = cfg_.chunk_size == 0 ? 1 : cfg_.chunk_size;
    const std::size_t aligned = total / c * c;
    if (aligned > 0) r.branching = aligned;
  }
  return device_tokens;
}

bool radix_tree::take_known_prefix(namespace_id ns, std::span<const token_id> key, node_ref known,
                                   std::size_t len) {
  if (len == 0 || len > key.size() || !valid(known) || known.node == root_) return false;
  path_.clear();
  std::size_t tokens = 0;
  for (radix_node* x = known.node; x != root_; x = x->parent) {
    if (x->ns != ns || x->evicted()) return false;
    tokens += x->key.size();
    path_.push_back(x);
  }
  if (tokens != len) return false;
  std::reverse(path_.begin(), path_.end());  // walk order, as insert's walk records it
#ifndef NDEBUG
  std::size_t at = 0;
  for (const radix_node* x : path_) {
    assert(std::equal(x->key.begin(), x->key.end(), key.begin() + static_cast<std::ptrdiff_t>(at)));
    at += x->key.size();
  }
#endif
  return true;
}

result<insert_result> radix_tree::insert(namespace_id ns, std::span<const token_id> key,
                                         std::span<const kv_index> value, slot_id slot,
                                         std::size_t prev_prefix_len,
                                         std::vector<kv_index>* duplicates, node_ref known_prefix) {
  const std::size_t p = cfg_.page_size;
  if (key.size() != value.size())
    return error{errc::invalid_argument, "insert: key has " + std::to_string(key.size()) +
                                             " tokens but value has " +
                                             std::to_string(value.size()) + " indices"};
  if (key.size() % p != 0)
    return error{errc::invalid_argument, "insert: key length " + std::to_string(key.size()) +
                                             " is not a multiple of page_size " +
                                             std::to_string(p)};
  if (slot <= 0 || static_cast<std::size_t>(slot) > slots_.capacity())
    return error{errc::invalid_argument, "insert: slot " + std::to_string(slot) + " out of range"};

  insert_result res;
  radix_node* node = root_;
  node->last_access = tick();
  if (key.empty()) {
    res.mamba_exist = true;
    res.node = {node, node->id};
    return res;
  }
  std::size_t total = 0;
  // SGLang moves every node of the walk to the front of its LRU list(s) as it passes it;
  // the walk is recorded and moved in one pass before anything else reorders the lists
  // (a split, the end of the walk): the same lists, without relinking the nodes that
  // are already in place.
  path_.clear();
  if (take_known_prefix(ns, key, known_prefix, prev_prefix_len)) {
    // The walk down to the caller's locked node, without comparing what it spells: the
    // same stamps and hits in the same order; nothing on it splits or is a duplicate
    // (every position is below prev_prefix_len).
    for (radix_node* x : path_) {
      x->last_access = tick();
      count_insert_hit(x);
    }
    node = known_prefix.node;
    total = prev_prefix_len;
    key = key.subspan(total);
    value = value.subspan(total);
  }
  const auto refresh_walk = [this] {
    const std::span<radix_node* const> walk = path_;
    full_lru_.move_to_front_in_order(walk, [](const radix_node*) { return true; });
    mamba_lru_.move_to_front_in_order(walk, [](const radix_node* n) { return !n->is_tombstone(); });
    path_.clear();
  };
  while (!key.empty()) {
    radix_node* child = find_child(node, ns, key);
    if (!child) break;
    node = child;
    node->last_access = tick();
    const std::size_t pl = key_match(node->key, key);
    if (node->evicted()) {
      // A host-only node takes the caller's fresh device ids (HiRadixCache insert) and
      // joins the full list (an evicted node is in neither list and has no slot).
      if (pl < node->key.size()) {
        refresh_walk();
        node = split(node, pl);
      }
      set_value(node, value.first(pl));
      record_restored(node);
      path_.push_back(node);
      sizes_.full_evictable += pl;
      --host_sizes_.evicted_nodes;
    } else {
      path_.push_back(node);  // in the full list, and in the mamba list unless a tombstone
      if (prev_prefix_len < total + pl) {
        const std::size_t start = prev_prefix_len > total ? prev_prefix_len - total : 0;
        const std::span<const kv_index> dup = value.subspan(start, pl - start);
        if (duplicates) {
          duplicates->insert(duplicates->end(), dup.begin(), dup.end());
        } else {
          free_kv(dup);
        }
      }
      if (pl < node->key.size()) {
        refresh_walk();
        node = split(node, pl);
      }
    }
    count_insert_hit(node);
    total += pl;
    key = key.subspan(pl);
    value = value.subspan(pl);
  }
  refresh_walk();
  res.prefix_len = total;
  if (!key.empty()) {
    radix_node* leaf = new_node();
    leaf->parent = node;
    leaf->ns = ns;
    leaf->key.assign(key.begin(), key.end());
    set_value(leaf, value);
    leaf->mamba = slot;
    node->children.push_back(leaf);
    full_lru_.insert_mru(leaf);
    mamba_lru_.insert_mru(leaf);
    sizes_.full_evictable += leaf->value.size();
    sizes_.mamba_evictable += 1;
    record_store(leaf);
    record_state(leaf, true);
    count_insert_hit(leaf);
    node = leaf;
  } else if (node->is_tombstone()) {
    node->mamba = slot;
    record_state(node, true);
    full_lru_.reset_mru(node);
    mamba_lru_.insert_mru(node);
    if (node->mamba_lock_ref > 0) {
      sizes_.mamba_protected += 1;
    } else {
      sizes_.mamba_evictable += 1;
    }
    node->last_access = tick();
  } else {
    res.mamba_exist = true;
    full_lru_.reset_mru(node);
    mamba_lru_.reset_mru(node);
    node->last_access = tick();
  }
  res.node = {node, node->id};
  return res;
}

status radix_tree::inc_lock(node_ref ref) {
  if (!valid(ref)) return {errc::not_found, "lock: stale or unknown node"};
  radix_node* n = ref.node;
  if (n == root_) return {};
  if (!n->is_tombstone()) {
    if (n->mamba_lock_ref == 0) {
      sizes_.mamba_evictable -= 1;
      sizes_.mamba_protected += 1;
    }
    ++n->mamba_lock_ref;
  }
  lock_path(n);
  return {};
}

void radix_tree::lock_path(radix_node* n) {
  for (; n != root_; n = n->parent) {
    if (n->full_lock_ref == 0) {
      sizes_.full_evictable -= n->value.size();
      sizes_.full_protected += n->value.size();
    }
    ++n->full_lock_ref;
  }
}

void radix_tree::unlock_path(radix_node* n) {
  for (; n != root_; n = n->parent) {
    assert(n->full_lock_ref > 0);
    if (n->full_lock_ref == 1) {
      sizes_.full_protected -= n->value.size();
      sizes_.full_evictable += n->value.size();
    }
    --n->full_lock_ref;
  }
}

status radix_tree::dec_lock(node_ref ref) {
  if (!valid(ref)) return {errc::not_found, "unlock: stale or unknown node"};
  radix_node* n = ref.node;
  if (n == root_) return {};
  // Validate the whole path first so an unbalanced unlock changes nothing.
  if (!n->is_tombstone() && n->mamba_lock_ref <= 0)
    return {errc::invalid_argument, "unlock: node is not mamba-locked"};
  for (radix_node* x = n; x != root_; x = x->parent)
    if (x->full_lock_ref <= 0) return {errc::invalid_argument, "unlock: node is not locked"};
  if (!n->is_tombstone()) {
    if (n->mamba_lock_ref == 1) {
      sizes_.mamba_protected -= 1;
      sizes_.mamba_evictable += 1;
    }
    --n->mamba_lock_ref;
  }
  unlock_path(n);
  return {};
}

void radix_tree::free_kv(std::span<const kv_index> ids) {
  must(kv_.free(ids), "tree freed a KV index it does not own");
}

void radix_tree::free_node_kv(const radix_node* n) {
  const node_kv& v = n->value;
  if (v.encoded()) {
    runs_.clear();
    v.for_each_run([this](kv_index first, std::size_t len) {
      runs_.push_back({first, static_cast<std::uint32_t>(len)});
    });
    must(kv_.free_id_runs(runs_), "tree freed a KV index it does not own");
    return;
  }
  if (v.run_length() == 0) return free_kv(v.stored());
  must(kv_.free_runs(v.stored(), v.run_length()), "tree freed a KV index it does not own");
}

void radix_tree::set_value(radix_node* n, std::span<const kv_index> ids) {
  const std::size_t run = kv_.is_whole_units(ids) ? kv_.unit_run_length(ids.size()) : 0;
  if (run != 0) {
    n->value.assign_runs(ids, run);
  } else if (kv_.page_size() != 1 || !n->value.assign_encoded(ids)) {
    n->value.assign(ids);
  }
}

void radix_tree::free_slot(slot_id s) {
  must(slots_.free_one(s), "tree freed a slot it does not own");
}

namespace {
/// The chained digests of `key`'s pages (`page` tokens each) after `prior` (nullptr: a
/// first page below the root), into `out`.
void hash_pages(const page_hasher& h, std::size_t page, const page_digest* prior,
                std::span<const token_id> key, std::vector<page_digest>& out) {
  const std::size_t pages = key.size() / page;
  out.clear();
  out.reserve(pages);  // `prior` may point at the last one pushed
  for (std::size_t i = 0; i < pages; ++i) {
    out.push_back(h.hash_page(prior, key.subspan(i * page, page)));
    prior = &out.back();
  }
}
}  // namespace

void radix_tree::ensure_hashes(radix_node* n) {
  if (n == root_ || !hasher_) return;
  if (n->hashes.size() == n->key.size() / cfg_.page_size) return;
  ensure_hashes(n->parent);
  const page_digest* prior =
      n->parent == root_ || n->parent->hashes.empty() ? nullptr : &n->parent->hashes.back();
  hash_pages(*hasher_, cfg_.page_size, prior, n->key, n->hashes);
}

std::size_t radix_tree::prefix_length(node_ref ref) const {
  if (!valid(ref)) return 0;
  std::size_t n = 0;
  for (const radix_node* x = ref.node; x != root_; x = x->parent)
    n += x->key.size();
  return n;
}

std::span<const page_digest> radix_tree::node_hashes(node_ref ref) {
  if (!valid(ref) || !hasher_) return {};
  ensure_hashes(ref.node);
  return ref.node->hashes;
}

void radix_tree::record_store(radix_node* n) {
  if (!cfg_.enable_events) return;
  ensure_hashes(n);
  std::optional<std::int64_t> parent_hash;
  if (n->parent != root_ && !n->parent->hashes.empty())
    parent_hash = block_hash_of(n->parent->hashes.back());
  const std::size_t p = cfg_.page_size;
  for (std::size_t i = 0; i < n->hashes.size(); ++i) {
    kv_event e;
    e.type = kv_event::kind::block_stored;
    e.ns = n->ns;
    e.block_hash = block_hash_of(n->hashes[i]);
    e.parent_block_hash = parent_hash;
    e.token_ids.assign(n->key.begin() + static_cast<std::ptrdiff_t>(i * p),
                       n->key.begin() + static_cast<std::ptrdiff_t>((i + 1) * p));
    e.block_size = static_cast<std::uint32_t>(p);
    parent_hash = e.block_hash;
    events_.push_back(std::move(e));
  }
}

void radix_tree::record_state(radix_node* n, bool stored) {
  if (!cfg_.enable_events || !cfg_.state_events || n == root_) return;
  ensure_hashes(n);
  if (n->hashes.empty()) return;
  kv_event e;
  e.type = stored ? kv_event::kind::block_stored : kv_event::kind::block_removed;
  e.group = kv_event::cache_group::mamba;
  e.ns = n->ns;
  e.block_hash = block_hash_of(n->hashes.back());
  if (stored) e.block_size = static_cast<std::uint32_t>(cfg_.page_size);
  events_.push_back(std::move(e));
}

void radix_tree::record_restored(radix_node* n) {
  if (cfg_.state_events) record_store(n);
}

std::vector<device_block> radix_tree::device_blocks() const {
  std::vector<device_block> out;
  if (!hasher_) return out;
  out.reserve(device_page_count());
  // Each entry carries its parent's last digest, so that a node whose digests the tree
  // does not keep (no events, no tier has needed them) is hashed here, into `scratch`, and
  // not kept: listing a page-1 tree of 1 M tokens once used to leave 32 MB of digests.
  struct entry {
    const radix_node* node;
    std::optional<page_digest> prior;
  };
  std::vector<entry> stack;
  for (const radix_node* c : root_->children)
    stack.push_back({c, std::nullopt});
  std::vector<page_digest> scratch;
  while (!stack.empty()) {
    const entry e = stack.back();
    stack.pop_back();
    const radix_node* n = e.node;
    if (n->evicted()) continue;  // host only: nothing of it (or below it) is on the device
    const std::size_t pages = n->key.size() / cfg_.page_size;
    std::span<const page_digest> hashes = n->hashes;
    if (hashes.size() != pages) {
      hash_pages(*hasher_, cfg_.page_size, e.prior ? &*e.prior : nullptr, n->key, scratch);
      hashes = scratch;
    }
    std::optional<std::int64_t> parent;
    if (e.prior) parent = block_hash_of(*e.prior);
    for (std::size_t i = 0; i < hashes.size(); ++i) {
      device_block b;
      b.hash = block_hash_of(hashes[i]);
      b.parent_hash = parent;
      b.checkpoint = i + 1 == hashes.size() && !n->is_tombstone();
      b.ns = n->ns;
      parent = b.hash;
      out.push_back(b);
    }
    const std::optional<page_digest> last =
        hashes.empty() ? std::nullopt : std::optional<page_digest>(hashes.back());
    for (const radix_node* c : n->children)
      stack.push_back({c, last});
  }
  return out;
}

std::size_t radix_tree::device_page_count() const {
  std::size_t pages = 0;
  std::vector<const radix_node*> stack(root_->children.begin(), root_->children.end());
  while (!stack.empty()) {
    const radix_node* n = stack.back();
    stack.pop_back();
    if (n->evicted()) continue;
    pages += n->key.size() / cfg_.page_size;
    stack.insert(stack.end(), n->children.begin(), n->children.end());
  }
  return pages;
}

void radix_tree::record_remove(radix_node* n) {
  if (!cfg_.enable_events) return;
  ensure_hashes(n);
  for (const page_digest& d : n->hashes) {
    kv_event e;
    e.type = kv_event::kind::block_removed;
    e.ns = n->ns;
    e.block_hash = block_hash_of(d);
    events_.push_back(std::move(e));
  }
}

std::vector<kv_event> radix_tree::drain_events() {
  std::vector<kv_event> out;
  out.swap(events_);
  return out;
}

void radix_tree::reset() {
  // Post-order deletion of every node below root.
  std::vector<radix_node*> stack(root_->children.begin(), root_->children.end());
  std::vector<radix_node*> order;
  while (!stack.empty()) {
    radix_node* n = stack.back();
    stack.pop_back();
    order.push_back(n);
    for (radix_node* c : n->children)
      stack.push_back(c);
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    radix_node* n = *it;
    free_node_kv(n);
    if (!n->is_tombstone()) free_slot(n->mamba);
    free_host_kv(n->host_value);
    free_host_slot(n);
    if (n->in_full_lru) full_lru_.remove(n);
    if (n->in_mamba_lru) mamba_lru_.remove(n);
    release_node(n);
  }
  root_->children.clear();
  sizes_ = {};
  host_sizes_ = {};
  backup_candidates_.clear();
  pending_demotions_.clear();
  if (cfg_.enable_events) {
    events_.clear();
    kv_event e;
    e.type = kv_event::kind::all_blocks_cleared;
    events_.push_back(std::move(e));
  }
}

std::vector<const radix_node*> radix_tree::lru_order(lru_kind kind) const {
  std::vector<const radix_node*> out;
  if (kind == lru_kind::full) {
    for (radix_node* x = full_lru_.first(); x; x = full_lru_.after(x))
      out.push_back(x);
  } else if (kind == lru_kind::mamba) {
    for (radix_node* x = mamba_lru_.first(); x; x = mamba_lru_.after(x))
      out.push_back(x);
  } else {
    for (radix_node* x = host_mamba_lru_.first(); x; x = host_mamba_lru_.after(x))
      out.push_back(x);
  }
  return out;
}

std::size_t radix_tree::leaf_count() const {
  std::size_t n = 0;
  for (radix_node* x = full_lru_.first(); x; x = full_lru_.after(x))
    n += x->is_leaf() ? 1 : 0;
  return n;
}

}  // namespace hc
