#pragma once
// The prefix radix tree of MambaRadixCache (cache-semantics.md §2-§3): page-keyed
// children, namespaces in disjoint subtrees, match with node split, insert with
// prev_prefix_len duplicate freeing / tombstone refill / mamba_exist, full and mamba
// locks, the two LRU lists, eviction with tombstoning and cascade deletion, KV events.
//
// Ownership: the tree owns its nodes. KV indices and slots stored in nodes are owned by
// the tree and returned to the injected allocators when nodes are evicted; indices passed
// to insert() become the tree's (duplicates are freed by insert itself, §3.3).
//
// Thread safety: none. Confined to one owner (the radix_cache actor); never shared.

#include <cstddef>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "actors/common/ids.hpp"
#include "actors/common/status.hpp"
#include "actors/radix_cache/kv_allocator.hpp"
#include "actors/radix_cache/kv_events.hpp"
#include "actors/radix_cache/lru_list.hpp"
#include "actors/radix_cache/radix_node.hpp"
#include "actors/radix_cache/slot_allocator.hpp"

namespace hc {

struct tree_config {
  /// Tokens per page (P). Keys are compared and stored in whole pages. Default: 1.
  std::size_t page_size = 1;
  /// C = mamba_cache_chunk_size, for the branching length. Default: 64.
  std::size_t chunk_size = 64;
  /// Record KV events (needs a page_hasher). Default: off.
  bool enable_events = false;
};

/// Result of match(): the device prefix up to the deepest node holding a slot.
struct match_result {
  /// KV indices of the matched prefix up to `last_node` (a multiple of page_size).
  std::vector<kv_index> indices;
  /// Deepest node on the matched path that holds a slot (root if none).
  node_ref last_node;
  /// Slot of last_node (no_slot for root).
  slot_id last_slot = no_slot;
  /// C-aligned length of the whole matched KV path when it goes deeper than last_node
  /// and that length is > 0 (spec §3.1); nullopt otherwise.
  std::optional<std::size_t> branching;
  /// Tokens matched by the KV walk (>= indices.size()).
  std::size_t kv_matched = 0;
};

struct insert_result {
  /// Tokens of the key that were already in the tree.
  std::size_t prefix_len = 0;
  /// True if the key's end node already held a slot: the caller keeps (and must free)
  /// the slot it offered.
  bool mamba_exist = false;
};

/// Eviction report. `tokens_evicted` / `mamba_evicted` count only their own pass
/// (MambaRadixCache semantics, §3.5; the traces check them); the totals also count what
/// each pass freed of the other component (Unified semantics, §5.5).
struct evict_result {
  std::size_t tokens_evicted = 0;
  std::size_t mamba_evicted = 0;
  std::size_t tokens_freed_total = 0;
  std::size_t slots_freed_total = 0;
};

/// Cumulative counts since construction, never reset (what metrics report as _total).
struct tree_counters {
  std::uint64_t evicted_tokens = 0;          ///< KV tokens freed by evict(), any caller
  std::uint64_t evicted_slots = 0;           ///< slots freed by evict(), any caller
  std::uint64_t tombstones_by_eviction = 0;  ///< internal nodes whose slot was evicted
  std::uint64_t tombstones_by_split = 0;     ///< split parents (created without a slot)
};

/// Sizes of the tree (the MambaRadixCache counters).
struct tree_sizes {
  std::size_t full_evictable = 0;
  std::size_t full_protected = 0;
  std::size_t mamba_evictable = 0;
  std::size_t mamba_protected = 0;
  std::size_t total_tokens() const noexcept { return full_evictable + full_protected; }
  std::size_t total_slots() const noexcept { return mamba_evictable + mamba_protected; }
};

class radix_tree {
 public:
  /// The allocators must outlive the tree. `hasher` is required iff events are enabled.
  radix_tree(tree_config cfg, kv_allocator& kv, slot_allocator& slots,
             const page_hasher* hasher = nullptr);
  ~radix_tree();
  radix_tree(const radix_tree&) = delete;
  radix_tree& operator=(const radix_tree&) = delete;

  const tree_config& config() const noexcept { return cfg_; }
  node_ref root() const noexcept { return {root_, root_->id}; }
  /// True if the node behind ref still exists.
  bool valid(node_ref ref) const noexcept { return ref.node && ref.node->id == ref.id; }

  /// §3.1. The key is page-floored first. May split a node (mutates the tree) and
  /// refreshes the LRU position of last_node and its ancestors.
  match_result match(namespace_id ns, std::span<const token_id> key);

  /// §3.3. REQUIRES: key.size() == value.size(), a multiple of page_size; slot valid.
  /// Frees the caller's duplicate KV indices at positions >= prev_prefix_len.
  result<insert_result> insert(namespace_id ns, std::span<const token_id> key,
                               std::span<const kv_index> value, slot_id slot,
                               std::size_t prev_prefix_len = 0);

  /// §3.4. Locking root is a no-op. An invalid ref is an error.
  status inc_lock(node_ref ref);
  status dec_lock(node_ref ref);

  /// §3.5: evict_full(num_tokens) then evict_mamba(mamba_num). Never fails.
  evict_result evict(std::size_t num_tokens, std::size_t mamba_num);

  const tree_sizes& sizes() const noexcept { return sizes_; }
  const tree_counters& counters() const noexcept { return counters_; }
  /// Non-root nodes.
  std::size_t node_count() const noexcept { return live_nodes_ - 1; }
  /// Leaves (non-root nodes without children).
  std::size_t leaf_count() const;

  /// Structural invariants that hold at any time (§2.3 inv. 1-3, 5, 7; LRU membership;
  /// ids not free in the allocators). Returns the first violation found.
  status check_invariants() const;
  /// SGLang's sanity_check (idle only): check_invariants() plus nothing locked and both
  /// LRU lists ordered by access time.
  status sanity_check() const;

  /// Moves out the recorded KV events (empty unless enabled).
  std::vector<kv_event> drain_events();

  /// Chained page digests of the path root..node (computed on demand).
  std::span<const page_digest> node_hashes(node_ref ref);

  /// Slot held by the node (no_slot for a tombstone or root).
  slot_id slot_of(node_ref ref) const noexcept { return valid(ref) ? ref.node->mamba : no_slot; }

  /// Nodes of one LRU list from most to least recent (for tests and `hcctl inspect`).
  std::vector<const radix_node*> lru_order(lru_kind kind) const;

  /// Drops every node (KV and slots returned to the allocators); emits AllBlocksCleared.
  void reset();

 private:
  /// Tests only (tests/support/radix_tree_test_access.hpp): builds states the public API
  /// cannot reach, to test defensive paths such as the cascade's locked-parent stop.
  friend struct radix_tree_test_access;

  radix_node* new_node();
  void release_node(radix_node* n);
  std::uint64_t tick() noexcept { return clock_ += (std::uint64_t{1} << 20); }
  radix_node* find_child(const radix_node* n, namespace_id ns,
                         std::span<const token_id> key) const noexcept;
  static void remove_child(radix_node* parent, radix_node* child);
  std::size_t key_match(std::span<const token_id> a, std::span<const token_id> b) const noexcept;
  radix_node* split(radix_node* child, std::size_t at);
  void ensure_hashes(radix_node* n);
  void record_store(radix_node* n);
  void record_remove(radix_node* n);
  void free_kv(std::span<const kv_index> ids);
  void free_slot(slot_id s);

  // eviction helpers (radix_tree_evict.cpp)
  struct leaf_eviction {
    std::size_t tokens = 0;    // leaf + cascaded tombstones
    radix_node* last_deleted;  // parent of it is the surviving ancestor
    radix_node* surviving_parent;
  };
  leaf_eviction evict_leaf(radix_node* x);
  std::size_t evict_full(std::size_t n, evict_result& r);
  std::size_t evict_mamba(std::size_t n, evict_result& r);
  void delete_leaf(radix_node* x);

  tree_config cfg_;
  kv_allocator& kv_;
  slot_allocator& slots_;
  const page_hasher* hasher_;
  radix_node* root_;
  lru_list<lru_kind::full> full_lru_;
  lru_list<lru_kind::mamba> mamba_lru_;
  tree_sizes sizes_;
  tree_counters counters_;
  std::uint64_t clock_ = 0;
  std::uint64_t next_id_ = 1;
  std::deque<radix_node> storage_;
  std::vector<radix_node*> free_nodes_;
  std::size_t live_nodes_ = 0;
  std::vector<kv_event> events_;
};

}  // namespace hc
