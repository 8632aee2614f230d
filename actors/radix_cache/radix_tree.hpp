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
#include <memory>
#include <optional>
#include <span>
#include <unordered_set>
#include <vector>

#include "actors/common/ids.hpp"
#include "actors/common/status.hpp"
#include "actors/common/tier_policy.hpp"
#include "actors/radix_cache/kv_allocator.hpp"
#include "actors/radix_cache/kv_events.hpp"
#include "actors/radix_cache/lru_list.hpp"
#include "actors/radix_cache/radix_node.hpp"
#include "actors/radix_cache/slot_allocator.hpp"

namespace hc {

/// Host tier (L2) settings of a tree. Defaults follow SGLang's HiCache.
struct host_tier_config {
  write_policy policy = write_policy::write_through;
  /// Insert hits before a write-through backup; 0 = the policy's own (1 or 2).
  std::uint32_t write_through_threshold = 0;
  /// load_back() skips KV loads shorter than this (unless an SSM restore is needed).
  std::size_t load_back_threshold = 10;
};

/// One copy between tiers, in ids only; the data plane moves the bytes. `device_kv[i]`
/// pairs with `host_kv[i]`; a slot pair is copied when both slots are set.
struct tier_copy {
  enum class direction : std::uint8_t { device_to_host, host_to_device };
  direction dir = direction::device_to_host;
  std::vector<kv_index> device_kv;
  std::vector<kv_index> host_kv;
  slot_id device_slot = no_slot;
  slot_id host_slot = no_slot;
  /// The node whose bytes move (backup_done / load_done / demotion_done take it).
  node_ref node;
};

struct tree_config {
  /// Tokens per page (P). Keys are compared and stored in whole pages. Default: 1.
  std::size_t page_size = 1;
  /// C = mamba_cache_chunk_size, for the branching length. Default: 64.
  std::size_t chunk_size = 64;
  /// Record KV events (needs a page_hasher). Default: off.
  bool enable_events = false;
  /// With enable_events, also what SGLang's events leave out (its conformance tests T4/T5
  /// expect them silent): a state checkpoint stored (group mamba) when a node gets a device
  /// slot and removed when it loses it, and BlockStored for KV that returns to the device
  /// (a load-back, a host-only node re-inserted). The events then describe the device
  /// tree exactly (device_blocks()). Default: off.
  bool state_events = false;
};

/// A page of KV on the device, as device_blocks() lists it.
struct device_block {
  std::int64_t hash = 0;                    ///< block_hash_of its chained digest
  std::optional<std::int64_t> parent_hash;  ///< the previous page's; none for a first page
  bool checkpoint = false;                  ///< the page ends a node that holds a device slot
  namespace_id ns = 0;
  friend bool operator==(const device_block&, const device_block&) = default;
};

/// Whether match() writes the prefix's KV ids into its result: a caller that needs only the
/// lengths (routing, scheduling policies) leaves them out, and the match reads no node ids.
enum class match_ids : bool { leave_out, collect };

/// Result of match(): the device prefix up to the deepest node holding a slot.
struct match_result {
  /// KV indices of the matched prefix up to `last_node` (a multiple of page_size); empty
  /// when match() was asked to leave them out.
  std::vector<kv_index> indices;
  /// Tokens of that prefix (indices.size() when they were collected).
  std::size_t prefix_len = 0;
  /// Deepest node on the matched path that holds a slot (root if none).
  node_ref last_node;
  /// Slot of last_node (no_slot for root).
  slot_id last_slot = no_slot;
  /// C-aligned length of the whole matched KV path when it goes deeper than last_node
  /// and that length is > 0 (spec §3.1); nullopt otherwise.
  std::optional<std::size_t> branching;
  /// Tokens matched by the KV walk (>= indices.size()).
  std::size_t kv_matched = 0;

  // --- host tier (§5.3); without it best == last_node and the rest is zero ---
  /// Deepest node on the path holding a device or host SSM state (root if none).
  node_ref best;
  /// Evicted (host-only) tokens between last_node and best.
  std::size_t host_hit_length = 0;
  /// best walked up while not backed up (root if none): the anchor of a prefetch.
  node_ref last_host_node;
  /// True if best's SSM state is on the host only (a load-back must restore it).
  bool mamba_host_hit = false;
};

/// What load_back() did.
struct load_back_result {
  /// False: skipped (below the threshold or over the quota); nothing changed.
  bool loaded = false;
  /// Device KV ids of the loaded tokens, in key order (append them to the prefix).
  std::vector<kv_index> new_indices;
  /// The node now anchoring the device prefix; locked until load_done() if loaded.
  node_ref last_node;
  /// Its device slot (restored from the host if it was host-only).
  slot_id slot = no_slot;
  /// H→D copies to perform before the request's next forward.
  std::vector<tier_copy> copies;
};

/// What insert_host_only() did.
struct host_insert_result {
  /// Leading tokens that were already in the tree (their host ids were freed).
  std::size_t already_present = 0;
  /// True if a new host-only leaf was created (it took the host slot, if one was given).
  bool new_leaf = false;
};

/// Host-tier sizes: ids held by the tree in the L2 pools.
struct host_sizes {
  std::size_t tokens = 0;
  std::size_t slots = 0;
  std::size_t evicted_nodes = 0;
};

struct insert_result {
  /// Tokens of the key that were already in the tree.
  std::size_t prefix_len = 0;
  /// True if the key's end node already held a slot: the caller keeps (and must free)
  /// the slot it offered.
  bool mamba_exist = false;
  /// The node the key ends at (the root for an empty key).
  node_ref node;
};

/// Result of match_inserted(): what match() of the key just inserted gives, its index list
/// written into the caller's row instead of `match.indices` (left empty).
struct inserted_match {
  match_result match;
  /// The device ids of the matched path: what match().indices.size() would be.
  std::size_t prefix_len = 0;
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

/// demote_prefix's report. Nodes move whole: `demoted_tokens`, `evicted_tokens` and
/// `kept_tokens` count the device KV of the path's nodes, which may reach past the prompt
/// when its last node does.
struct demote_report {
  std::size_t matched_tokens = 0;  ///< tokens of the prompt found in the tree (any tier)
  std::size_t demoted_tokens = 0;  ///< device KV moved to the host tier (still resumable)
  std::size_t evicted_tokens = 0;  ///< device KV dropped (an instance without a host tier)
  std::size_t slots_freed = 0;     ///< device SSM slots freed with them
  /// Device KV of the path that goes once the backups this call queued are done (the
  /// host tier, nodes without a backup): demoted then, unless used in the meantime.
  std::size_t deferred_tokens = 0;
  /// Device KV of the path that stays: held by a request or a pin, shared with another
  /// branch still on the device, or (host tier) without a backup that can be made now.
  std::size_t kept_tokens = 0;
};

/// Cumulative counts since construction, never reset (what metrics report as _total).
struct tree_counters {
  std::uint64_t evicted_tokens = 0;          ///< KV tokens freed by evict(), any caller
  std::uint64_t evicted_slots = 0;           ///< slots freed by evict(), any caller
  std::uint64_t tombstones_by_eviction = 0;  ///< internal nodes whose slot was evicted
  std::uint64_t tombstones_by_split = 0;     ///< split parents (created without a slot)
  std::uint64_t demoted_tokens = 0;          ///< device KV freed by demotion to the host
  std::uint64_t backed_up_tokens = 0;        ///< KV tokens written D→H
  std::uint64_t loaded_back_tokens = 0;      ///< KV tokens copied H→D by load_back
  std::uint64_t host_evicted_tokens = 0;     ///< host KV freed by host eviction
  std::uint64_t host_evicted_slots = 0;      ///< host SSM slots freed by eviction
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
  /// refreshes the LRU position of last_node and its ancestors. With match_ids::leave_out
  /// the result is the same but for `indices`, left empty (`prefix_len` says how long).
  match_result match(namespace_id ns, std::span<const token_id> key,
                     match_ids ids = match_ids::collect);

  /// match(ns, key) right after `ins = insert(ns, key, ...)`, without comparing the key again
  /// (SGLang's cache_unfinished_req re-matches the key it inserted): the same recency
  /// refresh, the same result — insert splits where the key ends, so the walk would end at
  /// ins.node. Instead of filling match.indices it writes the ids at positions [from,
  /// prefix_len) into out at those positions (the caller's row already holds the rest).
  /// REQUIRES: no other call on the tree since that insert; out.size() >= the key's length.
  inserted_match match_inserted(const insert_result& ins, std::span<kv_index> out,
                                std::size_t from);

  /// §3.3. REQUIRES: key.size() == value.size(), a multiple of page_size; slot valid.
  /// Frees the caller's duplicate KV indices at positions >= prev_prefix_len — or, when
  /// `duplicates` is given, appends them there for the caller to free (a forward may still
  /// be writing them: overlap scheduling).
  /// `known_prefix`: the node a request holds locked whose path spells key[0,
  /// prev_prefix_len) (its match, or its last cache_unfinished): the walk takes that path
  /// without comparing it — same stamps, hits and LRU moves as the compared walk. Ignored
  /// (the whole key is compared) unless it is valid, in `ns`, not evicted and its path is
  /// exactly prev_prefix_len tokens long. REQUIRES when given: the path spells that prefix
  /// (debug builds check the tokens).
  result<insert_result> insert(namespace_id ns, std::span<const token_id> key,
                               std::span<const kv_index> value, slot_id slot,
                               std::size_t prev_prefix_len = 0,
                               std::vector<kv_index>* duplicates = nullptr,
                               node_ref known_prefix = {});

  /// §3.4. Locking root is a no-op. An invalid ref is an error.
  status inc_lock(node_ref ref);
  status dec_lock(node_ref ref);

  /// §3.5: evict_full(num_tokens) then evict_mamba(mamba_num). Never fails. With a host
  /// tier, backed-up D-leaves are demoted (device ids freed, node kept) and write_back
  /// backs a leaf up first; the D→H copies this queues are taken with drain_copies().
  evict_result evict(std::size_t num_tokens, std::size_t mamba_num);

  /// Takes the cached path of `key` (page-floored, namespace `ns`) off the device, deepest
  /// node first, as eviction would take those nodes if they were the least recent: nodes
  /// below the first one that must stay (locked, or with another child on the device).
  /// Without a host tier those nodes are evicted. With one, those already backed up are
  /// demoted at once (device KV and slot freed, the host copy kept); the others, and the
  /// ancestors write-through's backup contiguity needs, become backup candidates
  /// (take_backup_candidates), backed up as write-through backs up — locked while the copy
  /// runs, whatever the write policy — and demoted by backup_done(), deepest first, unless
  /// a match or insert touched them since. Never splits a node and leaves recency alone
  /// (the hint says "not soon"). What it frees at once counts as evictions
  /// (counters().evicted_tokens / evicted_slots); a demotion also as demoted_tokens.
  demote_report demote_prefix(namespace_id ns, std::span<const token_id> key);

  // ---- host tier (cache-semantics.md §5.2-§5.3) ---------------------------------------
  /// Turns the host tier on. The host allocators must outlive the tree and use the
  /// tree's page size. REQUIRES: the tree is empty. Branching lengths are off from now.
  void enable_host_tier(const host_tier_config& cfg, kv_allocator& host_kv,
                        slot_allocator& host_slots);
  bool host_tier_enabled() const noexcept { return host_kv_ != nullptr; }
  const host_tier_config& host_config() const noexcept { return host_cfg_; }

  /// Backs the node up: host KV ids (evicting host leaves if short) and, if the node has a
  /// device slot, a host slot (evicting host SSM states if short). All or nothing:
  /// out_of_memory if the host is full of protected data. Under write-through the node must
  /// hang below root or a backed-up parent (backup contiguity) and stays full-locked until
  /// backup_done(). Returns the D→H copy to perform.
  result<tier_copy> write_backup(node_ref ref);
  /// The D→H write of `ref` finished: unlock it, and demote it (and its ancestors) if
  /// demote_prefix asked for that and nobody used them since. (The backup lock holds the KV path
  /// and, when the write copies the device slot, that slot: evicted while the copy waits for the
  /// forwards that write it, the slot could be reused — or the host state restored — before the
  /// host holds its bytes.)
  status backup_done(node_ref ref);
  /// Nodes whose insert hits reached the write-through threshold and that can be backed up
  /// now (parent root or backed up), oldest first. Cleared by the call.
  std::vector<node_ref> take_backup_candidates();
  /// D→H copies queued by eviction (write_back demotions). Cleared by the call.
  std::vector<tier_copy> drain_copies();
  /// A drained write_back copy finished: its node, host-protected since the demotion so
  /// that its host ids cannot be evicted and reused before the bytes arrived, is released.
  status demotion_done(const tier_copy& c);

  /// Frees host leaves (and their host SSM slots), least recent first, cascading up.
  /// Returns the host KV tokens freed.
  std::size_t evict_host(std::size_t num_tokens);
  /// Frees host SSM slots, least recent first: an H-leaf goes whole, other nodes keep their
  /// KV. Returns the slots freed.
  std::size_t evict_mamba_host(std::size_t n);

  /// Host protection (prefetch, L3 backup): a protected node is not an H-leaf and its host
  /// SSM state is not evicted. protect_host guards the KV, protect_host_mamba the state.
  status protect_host(node_ref ref);
  status release_host(node_ref ref);
  status protect_host_mamba(node_ref ref);
  status release_host_mamba(node_ref ref);

  /// §5.3: loads the evicted part of root..`best` back to the device, and best's SSM state
  /// if it is host-only. Skipped (loaded = false) when the KV to load is below the
  /// load-back threshold or above `mem_quota` tokens (less what locking the anchor takes
  /// from the evictable size), unless an SSM restore is needed. Device KV and slots are
  /// taken by evicting if short; if still short nothing changes. The loaded end node is
  /// locked until load_done().
  result<load_back_result> load_back(node_ref best, std::int64_t mem_quota);
  /// The H→D copies of a load_back finished: unlock its end node.
  status load_done(node_ref ref);

  /// Prefetch result (§5.4): hangs `key` (page multiple, the tokens after `anchor`) below
  /// `anchor` as host-only nodes holding `host_ids`. The part already in the tree is not
  /// duplicated: its host ids are freed. `host_slot` (or no_slot) goes to the new leaf;
  /// if no leaf is created the caller keeps it. REQUIRES: host_ids.size() == key.size().
  result<host_insert_result> insert_host_only(namespace_id ns, node_ref anchor,
                                              std::span<const token_id> key,
                                              std::span<const kv_index> host_ids,
                                              slot_id host_slot);

  const host_sizes& host_usage() const noexcept { return host_sizes_; }

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
  /// Every page of KV on the device, parents before children: what the events of
  /// state_events describe (empty without a page_hasher). Digests the tree does not keep
  /// are computed for the call and dropped; O(device pages) time and result.
  std::vector<device_block> device_blocks() const;
  /// How many pages device_blocks() would list, counted without hashing (O(nodes)).
  std::size_t device_page_count() const;

  /// Chained page digests of the path root..node (computed on demand).
  std::span<const page_digest> node_hashes(node_ref ref);
  /// Tokens from the root to the end of `ref`'s key (0 for the root or a stale ref).
  std::size_t prefix_length(node_ref ref) const;
  /// The page hasher (nullptr if the tree has none).
  const page_hasher* hasher() const noexcept { return hasher_; }

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
  /// state_events: n got / is losing its device slot (group mamba).
  void record_state(radix_node* n, bool stored);
  /// state_events: n's KV came back to the device (BlockStored, group full).
  void record_restored(radix_node* n);
  void free_kv(std::span<const kv_index> ids);
  /// Frees n's device ids (kept as runs, by the run: one stored id per pool unit).
  void free_node_kv(const radix_node* n);
  /// n->value = ids: as runs when they are whole units of the KV pool, encoded when at page 1
  /// they are several runs that encode in 3/4 of the entries, else listed (node_kv).
  void set_value(radix_node* n, std::span<const kv_index> ids);
  void free_slot(slot_id s);
  /// Full (KV) lock on n and its ancestors, without the SSM lock (inc_lock takes both).
  void lock_path(radix_node* n);
  void unlock_path(radix_node* n);

  // host tier helpers (radix_tree_host.cpp)
  void free_host_kv(std::span<const kv_index> ids);
  /// Frees host ids the tree never held (a prefetch's duplicates).
  void free_host_kv_unowned(std::span<const kv_index> ids);
  void free_host_slot(radix_node* n);
  /// Frees every id of n (device and host), unlinks it from the lists and deletes it.
  std::size_t delete_node(radix_node* n);
  /// Deletes childless ancestors that hold no SSM state anywhere and are neither locked nor
  /// host-protected, from `parent` up. Returns the device tokens freed; sets *stop to the
  /// first ancestor kept.
  std::size_t cascade_delete(radix_node* parent, radix_node** stop);
  /// Frees the node's device KV and slot, keeping it as a host-only node.
  void demote(radix_node* n);
  /// Deletes n (and stateless ancestors) if it is a leaf holding no state and nothing
  /// holds it any more.
  void drop_if_stateless_leaf(radix_node* n);
  /// protect/release of one host-protection counter (delta +1 or -1).
  status adjust_host_hold(node_ref ref, std::int32_t radix_node::*counter, int delta,
                          const char* what);
  bool is_h_leaf(const radix_node* n) const noexcept;
  void count_insert_hit(radix_node* n);
  status check_host_fields(const radix_node* n, host_sizes& sums,
                           std::unordered_set<slot_id>& seen) const;
  result<tier_copy> backup_node(radix_node* n, bool lock_until_done);
  // eviction helpers (radix_tree_evict.cpp)
  struct leaf_eviction {
    std::size_t tokens = 0;    // leaf + cascaded tombstones
    radix_node* last_deleted;  // parent of it is the surviving ancestor
    radix_node* surviving_parent;
  };
  leaf_eviction evict_leaf(radix_node* x);
  std::size_t evict_device_leaf(radix_node* x, radix_node** surviving, bool* kept);
  std::size_t evict_full(std::size_t n, evict_result& r);
  std::size_t evict_mamba(std::size_t n, evict_result& r);
  /// demote_prefix's walk: the prompt's path nodes that hold device KV, root's child first.
  std::vector<radix_node*> device_path(namespace_id ns, std::span<const token_id> key,
                                       std::size_t* matched) const;
  void delete_leaf(radix_node* x);

  tree_config cfg_;
  kv_allocator& kv_;
  slot_allocator& slots_;
  const page_hasher* hasher_;
  radix_node* root_;
  lru_list<lru_kind::full> full_lru_;
  lru_list<lru_kind::mamba> mamba_lru_;
  lru_list<lru_kind::host_mamba> host_mamba_lru_;
  tree_sizes sizes_;
  host_tier_config host_cfg_;
  kv_allocator* host_kv_ = nullptr;
  slot_allocator* host_slots_ = nullptr;
  host_sizes host_sizes_;
  std::vector<node_ref> backup_candidates_;
  std::vector<tier_copy> copies_;
  /// demote_prefix's nodes that wait for a backup (theirs or a child's), with their
  /// last_access then: a later access cancels the demotion. At most
  /// max_pending_demotions, oldest dropped first.
  struct pending_demotion {
    node_ref node;
    std::uint64_t last_access;
  };
  static constexpr std::size_t max_pending_demotions = 4096;
  std::vector<pending_demotion> pending_demotions_;
  /// backup_done's part: demotes `n` and its ancestors while each is a pending demotion
  /// that can go (backed up, unlocked, no child on the device, untouched since).
  void demote_pending_upward(radix_node* n);
  bool is_demotion_pending(const radix_node* n) const;
  tree_counters counters_;
  std::uint64_t clock_ = 0;
  std::uint64_t next_id_ = 1;
  /// Every node ever made, one allocation each (never moved); released nodes wait in
  /// free_nodes_ for reuse. Not slabs: a slab is fresh memory, and its first-touch page
  /// faults (~12 µs a page on this VM) land on the insert that opens it, where one node
  /// at a time reuses the chunks the heap already has (BENCHMARKS.md §2.1.5).
  std::vector<std::unique_ptr<radix_node>> storage_;
  std::vector<radix_node*> free_nodes_;
  std::vector<id_run> runs_;  ///< free_node_kv's scratch: an encoded node's runs
  std::size_t live_nodes_ = 0;
  std::vector<kv_event> events_;
  /// insert()'s known_prefix: fills path_ with root..known (walk order) and returns true if
  /// it can stand for the compared walk of key[0, len) (see insert).
  bool take_known_prefix(namespace_id ns, std::span<const token_id> key, node_ref known,
                         std::size_t len);
  /// A match of the empty key (no walk, no recency refresh).
  match_result empty_match() const;
  /// match()'s end once its walk is known (`best`, `total` matched tokens, whether the walk
  /// went deeper than best): the recency refresh, the device / host anchors, the branching
  /// length and, if `collect`, the device ids — appended to r.indices, or with `out`, those
  /// at positions >= from written to out at their positions. Returns the number of device
  /// ids (r.prefix_len).
  std::size_t finish_match(radix_node* best, std::size_t total, bool deeper_than_best,
                           match_result& r, bool collect, kv_index* out, std::size_t from);
  /// Scratch of match() (the matched path, deepest node first) and insert() (the walk not
  /// yet moved in the LRU lists, in walk order); kept to reuse its storage.
  std::vector<radix_node*> path_;
};

}  // namespace hc
