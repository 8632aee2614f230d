#pragma once
// Request bookkeeping for the three strategies, with SGLang's exact slot and KV
// semantics: match with COW, admission (alloc_req_slots), KV extension, prefill and
// decode tracking (eager and lazy ping-pong), cache_unfinished_req (donation),
// cache_finished_req, release / abort without insert, and the deferred clear / COW /
// snapshot command lists (cache-semantics.md §2.6, §3.6-§3.10, §4.3; seeds 24954, 27118).
//
// Every method validates its arguments and returns an error value instead of asserting;
// on error nothing is leaked and the caches stay consistent.
//
// Thread safety: none. In the node, one request_manager per session lives in the
// radix_cache actor of the session's instance, beside the tree its requests point into
// (a step is one message to that one owner); replay and tests run it on one thread.

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "actors/common/batch_progress.hpp"
#include "actors/common/clock.hpp"
#include "actors/common/status.hpp"
#include "actors/common/strategy.hpp"
#include "actors/radix_cache/radix_cache.hpp"
#include "actors/radix_cache/slot_allocator.hpp"
#include "actors/scheduler/forward_ops.hpp"
#include "actors/scheduler/request.hpp"
#include "actors/scheduler/token_budget.hpp"
#include "actors/scheduler/tracking.hpp"

namespace hc {

struct request_config {
  /// Default: no_buffer.
  strategy strat = strategy::no_buffer;
  /// Ping-pong entries per request: 2 with overlap scheduling, 1 without. Default: 2.
  int pp_size = 2;
  /// C, the prefill snapshot alignment. Default: 64.
  std::size_t chunk_size = 64;
  /// Decode snapshot interval. Default: 256.
  std::size_t track_interval = 256;
  /// Request rows (ids 1..rows). Default: 16.
  std::size_t rows = 16;
  /// Width of a request row; 0 = unlimited. Default: 0.
  std::size_t max_context_len = 0;
  /// Slots pre-evicted per admitted request (3; 2 for lazy). 0 = derive from strat.
  std::size_t alloc_factor = 0;
  /// Test hook (SGLANG_TEST_MAMBA_LAZY_ALLOC_FAIL): lazy boundary preallocs fail.
  bool force_lazy_prealloc_failure = false;
  /// no_buffer donation copies (working -> donated slot) are handed out by
  /// take_forward_ops (true: SGLang's deferral, the replay path) or only by
  /// take_pending_snapshots (false: the node runs them on its instance stream right after
  /// the step, before any other session can read the donated slot). Default: true.
  bool snapshots_in_forward_ops = true;
  /// The session whose forwards write this manager's requests (never 0 on the node): the
  /// writer of the nodes it caches while a forward of it runs (write_fences.hpp). 0: no
  /// fence reports (the replay path), nothing is marked.
  std::uint64_t session = 0;
  /// The session's request rows where its worker reads them (the node: POSIX shared
  /// memory, InstanceSpec.sharedRows): (rows + 1) rows of max_context_len KV ids, row r
  /// at r * max_context_len (row 0 unused), SGLang's req_to_token. Every change of a
  /// row's KV ids (admission, KV extension, cache_unfinished's switch to the tree's ids)
  /// is written there before the command returns, and match / alloc_kv /
  /// cache_unfinished results carry no index lists: the worker reads its row instead.
  /// Empty (default): rows are private and results carry the lists. Owned by the caller;
  /// must outlive the manager; needs max_context_len > 0.
  std::span<kv_index> shared_rows{};
  /// The instance's budget of pinned tokens (shared by its sessions): a pin takes its
  /// pinned_len from it and is refused with out_of_memory past the limit. nullptr: the
  /// manager makes its own (make_pin_budget).
  std::shared_ptr<token_budget> pinned_tokens{};
  /// The node's budget of tokens held by live requests (shared by every session): create
  /// (its prompt + request_record_tokens) and append take from it and are refused with
  /// out_of_memory past its limit; a finished, aborted or dropped request gives its tokens
  /// back. nullptr = no budget.
  std::shared_ptr<token_budget> live_tokens{};
};

struct match_info {
  std::size_t prefix_len = 0;
  std::span<const kv_index> indices;  ///< valid until the request's next call
  slot_id node_slot = no_slot;        ///< slot of the matched node (-1 for root)
  std::optional<std::size_t> branching;
  slot_id working = no_slot;      ///< working slot after COW (-1 if none)
  std::size_t kv_matched = 0;     ///< KV tokens matched, resumable or not (>= prefix_len)
  std::size_t loaded_tokens = 0;  ///< of prefix_len, tokens loaded back from the host tier
};

struct pin_info {
  std::uint64_t id = 0;        ///< the pin's id; 0: nothing cached, no pin made
  std::size_t pinned_len = 0;  ///< resumable prefix held on the device
  std::size_t kv_matched = 0;  ///< KV tokens matched (>= pinned_len)
  /// Tokens of pinned_len loaded back from the host tier (copied H→D before the next
  /// forward of any session, as a match's load-back)
  std::size_t loaded_tokens = 0;
};

/// Pins hold at most this share of an instance's KV pool (each pin counted with its whole
/// pinned_len, so overlapping pins count twice): the rest stays for requests.
inline constexpr double max_pinned_share = 0.5;
/// A budget of pinned tokens for the instance of `cache`: max_pinned_share of its KV pool.
std::shared_ptr<token_budget> make_pin_budget(const radix_cache& cache);
/// Pins one session may hold at once.
inline constexpr std::size_t max_pins_per_session = 4096;
/// The longest TTL a pin may ask for (7 days).
inline constexpr std::uint64_t max_pin_ttl_ms = 7ULL * 24 * 3600 * 1000;

struct admit_info {
  row_id row = no_row;
  slot_id working = no_slot;
  std::optional<std::array<slot_id, 2>> pingpong;  ///< entries as allocated (-1 = empty)
};

struct unfinished_info {
  bool inserted = false;  ///< false: nothing was tracked (extra_buffer)
  std::size_t protected_len = 0;
  std::span<const kv_index> prefix;  ///< first protected_len row entries
  slot_id node_slot = no_slot;
};

struct finish_info {
  bool inserted = false;
  std::size_t cached_len = 0;  ///< tokens offered to the tree
  bool mamba_exist = false;
};

/// One request's prefill-tracking decision with the slot it writes.
struct extend_track {
  prefill_track plan;
  slot_id track_slot = no_slot;
};

struct decode_track {
  bool mask = false;
  slot_id track_slot = no_slot;
};

class request_manager {
 public:
  /// `cache` must outlive the manager.
  request_manager(const request_config& cfg, radix_cache& cache);
  /// Gives the live requests' tokens back to the budget (their requests are dropped).
  ~request_manager();
  request_manager(const request_manager&) = delete;
  request_manager& operator=(const request_manager&) = delete;

  const request_config& config() const noexcept { return cfg_; }

  /// Registers a request with its prompt (input_len tokens). Handles are never reused.
  status create(request_handle h, namespace_id ns, std::vector<token_id> prompt);
  /// Appends generated tokens (decode outputs) to the request's token list.
  status append_tokens(request_handle h, std::span<const token_id> tokens);

  /// Scheduler's init_next_round_input: match_prefix(prompt[:input_len-1], cow=true).
  result<match_info> match(request_handle h);
  /// inc_lock_ref / dec_lock_ref of the request's last node. The lock is what keeps the
  /// tree from evicting the KV ids of the matched prefix, so an admitted request whose row
  /// reads a prefix the tree owns cannot drop it (unlock is refused: finish or abort
  /// releases it), and alloc_req refuses a matched prefix that is not locked. SGLang trusts
  /// its scheduler here; a worker's out-of-order unlock would free ids its row still reads.
  status lock(request_handle h);
  status unlock(request_handle h);
  /// alloc_req_slots for one request: pre-evict slots, row, working slot, ping-pong.
  result<admit_info> alloc_req(request_handle h);
  /// Extends the request's KV by n at row position start (== current length).
  result<std::span<const kv_index>> alloc_kv(request_handle h, std::size_t start, std::size_t n);
  /// alloc_kv of the rest of the request: from the row's end to its last token (none when
  /// the row already covers every token).
  result<std::span<const kv_index>> alloc_kv_to_end(request_handle h);
  /// False when the rows are shared (request_config::shared_rows): results carry no
  /// index lists.
  bool index_lists_in_results() const noexcept { return cfg_.shared_rows.empty(); }
  /// Tokens the matches that succeeded looked up since the manager was made: each one's
  /// key, its prompt but the last token (input_len - 1). The denominator of a token hit
  /// rate: matched tokens / queried tokens.
  std::uint64_t queried_tokens() const noexcept { return queried_tokens_; }

  // ---- Pins (cmd::pin): a prefix kept on the device without a request ------------------
  // Not an SGLang call. A pin matches `tokens` as a lookup does (no COW; the LRU moves; with
  // a host tier, loading back what is on the host only, as a match does) and
  // locks the deepest node with a state (inc_lock_ref, as a request's matched prefix), so
  // no eviction takes its resumable prefix, until unpin, its TTL or the session's end.

  /// Pins the cached resumable prefix of `tokens` for ttl_ms (0: until unpin or
  /// release_pins). Nothing cached: pin 0, no pin made. invalid_argument for a TTL over
  /// max_pin_ttl_ms; out_of_memory past max_pins_per_session or the pinned-token budget.
  result<pin_info> pin(namespace_id ns, std::span<const token_id> tokens, std::uint64_t ttl_ms,
                       clock_ns now);
  /// Releases a pin of this manager; not_found for an unknown, released or expired one.
  status unpin(std::uint64_t id);
  /// Releases the pins whose TTL ended by `now`; how many.
  std::size_t expire_pins(clock_ns now);
  /// Releases every pin (the session closes).
  void release_pins();
  std::size_t pins() const noexcept { return pins_.size(); }
  /// The pinned_len of this manager's pins, summed.
  std::uint64_t pinned_tokens() const noexcept { return pinned_tokens_; }

  /// Records a snapshot: tracked length = seqlen; optionally flips next_track_idx.
  /// Returns the keep slot (the entry now holding the newest snapshot).
  result<slot_id> record_track(request_handle h, std::size_t seqlen, bool flip);
  /// Prefill tracking decision for an extend of extend_len after prefix_len tokens;
  /// applies it (tracked length, next index). Mask false for no_buffer.
  result<extend_track> prepare_extend(request_handle h, std::size_t prefix_len,
                                      std::size_t extend_len);
  /// Decode step reaching the request's current KV length; lazy: preallocates the second
  /// track slot at a boundary (evict one slot and retry once on failure).
  result<decode_track> prepare_decode(request_handle h);
  /// After the decode step: boundary bookkeeping; `finished` = the request ends now.
  /// The step is the oldest prepared and not yet processed one (overlap scheduling
  /// prepares step k+1 before processing step k); without one, the committed length.
  status process_decode(request_handle h, bool finished);
  /// Speculative decode result: `accepted` drafts accepted in this step; a track boundary
  /// they crossed is tracked (spec/cache-semantics.md §4.4). extra_buffer only: SGLang runs
  /// no radix cache with no_buffer and speculative decoding, and asserts extra_buffer_lazy
  /// off with it (§4.1), so those strategies refuse it (invalid_argument).
  status process_spec_decode(request_handle h, std::size_t accepted, bool finished);

  /// cache_unfinished_req with fill_ids = tokens[:fill_len]. REQUIRES an admitted request
  /// (an error otherwise: its matched ids are not its own until admission).
  result<unfinished_info> cache_unfinished(request_handle h, std::size_t fill_len);
  /// release_kv_cache(is_insert=true) (lazy: unless a failed boundary forbids it); the
  /// handle is dead afterwards.
  result<finish_info> finish(request_handle h);
  /// Abort / retraction: release without insert; the handle is dead afterwards.
  status abort(request_handle h);
  /// Not admitted after match: frees the COW slot the match allocated (PR 21404).
  status not_admitted(request_handle h);

  /// Deferred data ops for an extend batch: every pending snapshot copy, then the clears
  /// and COW pairs of the listed requests (each taken once).
  forward_ops take_forward_ops(std::span<const request_handle> extend_batch);
  /// Every pending donation copy (and forgets them).
  std::vector<slot_copy> take_pending_snapshots();
  /// True if a snapshot copy into `slot` waits to be taken (the slot's bytes are not final).
  bool snapshot_pending_into(slot_id slot) const;

  const request_record* find(request_handle h) const;
  /// Handles of every live request (any order).
  std::vector<request_handle> live_handles() const;
  std::size_t live_requests() const noexcept { return reqs_.size(); }
  const row_allocator& rows() const noexcept { return rows_; }

  /// Slots held by live requests (working + ping-pong) or quarantined, for the idle
  /// invariant.
  std::size_t held_slots() const;
  /// KV tokens held by live requests outside the tree or quarantined (pages * page_size
  /// when paged).
  std::size_t held_kv_tokens() const;

  /// available + evictable + protected + held == capacity for KV tokens and slots.
  status check_pool_invariants() const;

  // ---- Quarantine of ids the session's stream may still write (issue 6) -----------------
  // On the node, data ops reach the stream when take_ops hands them out, and a forward
  // writes its requests' slots and KV between begin_forward and end_forward. An id a
  // release frees after ops were handed out for a batch that has not ended, or while a
  // forward is in flight (overlap scheduling: the finished request is already in the next
  // batch), may still be written by them: it is held back until that batch ended, so no
  // other request — of any session — can be given it (and then see it overwritten).
  // Without fence reports (the replay path) nothing is ever quarantined.

  /// Ops for `batch` were handed to the stream, or its forward began.
  void stream_claimed(std::uint64_t batch);
  /// The stream ended `batch`: ids quarantined until a batch <= it are freed.
  void stream_ended(std::uint64_t batch);
  /// Frees every quarantined id (the session closes: nothing of it runs any more).
  void release_quarantine();
  /// Forwards of other sessions that may still write what this session's requests reached
  /// since the last call (matched prefixes, dedup onto their nodes, COW sources): its next
  /// forward must begin only after they ended. Cleared by the call.
  std::vector<writer_mark> take_read_waits();
  /// Nodes this session cached while a forward of it ran, still locked until it ends.
  std::size_t write_locks() const noexcept { return write_locks_.size(); }

  /// Ids held back now.
  std::size_t quarantined_slots() const noexcept { return quarantine_slots_.size(); }
  std::size_t quarantined_kv_tokens() const;

 private:
  result<request_record*> get(request_handle h);
  int other_idx(int i) const noexcept { return cfg_.pp_size == 2 ? 1 - i : i; }
  /// The track entry holding the snapshot at tracked_len. Lazy: next_track_idx, unless a
  /// prepared, unprocessed step (overlap scheduling) already moved it to a preallocated
  /// slot that this step is writing.
  int keep_idx(const request_record& r) const noexcept {
    if (!lazy()) return other_idx(r.next_track_idx);
    return pending_step(r, /*overwrite=*/false) ? 1 - r.next_track_idx : r.next_track_idx;
  }
  /// True if a prepared, unprocessed decode step flipped the lazy track index (overwrite
  /// false) or writes into the keep slot (overwrite true).
  static bool pending_step(const request_record& r, bool overwrite) noexcept {
    for (std::size_t i = 0; i < r.prepared_count; ++i)
      if (overwrite ? r.prepared_decodes[i].lazy_overwrite : r.prepared_decodes[i].lazy_flip)
        return true;
    return false;
  }
  /// The request is admitted and its row's first cache_protected_len ids are the tree's.
  static bool reads_tree_prefix(const request_record& r) noexcept {
    return r.row != no_row && r.cache_protected_len > 0;
  }
  bool extra() const noexcept { return uses_track_buffer(cfg_.strat); }
  bool lazy() const noexcept { return cfg_.strat == strategy::extra_buffer_lazy; }
  void free_kv(std::span<const kv_index> ids);
  void free_slot(slot_id s);
  void free_mamba_cache(request_record& r, std::optional<int> keep);
  status release(request_record& r, bool is_insert, finish_info* info);
  void drop_pending_ops(const request_record& r);
  /// Records the live writer marks of other sessions on the path root..last.
  /// Copies row_kv[from, to) of an admitted request to its shared row (a no-op when the
  /// rows are private).
  void publish_row(const request_record& r, std::size_t from, std::size_t to);
  /// Erases a request's record, giving its tokens back to the budget.
  void drop(request_handle h);
  void note_writers(node_ref last);
  /// After an insert of `value` (row positions [from, value.size()) are the request's own
  /// ids): marks the nodes that adopted them, or the offered slot, with the session's
  /// in-flight forward and locks the end node until that forward ended.
  void mark_written(const insert_result& ins, std::span<const kv_index> value, std::size_t from);

  request_config cfg_;
  radix_cache& cache_;
  row_allocator rows_;
  /// The node whose path spells the request's protected prefix, for insert to walk
  /// without comparing it: its last_node while it holds the lock there; none otherwise.
  static node_ref locked_prefix(const request_record& r) noexcept;
  std::unordered_map<request_handle, request_record> reqs_;
  std::vector<slot_copy> pending_snapshots_;
  std::vector<kv_index> scratch_;
  struct held_kv {
    std::uint64_t until;  ///< freed once this batch ended
    std::vector<kv_index> ids;
  };
  struct held_slot {
    std::uint64_t until;
    slot_id slot;
  };
  std::vector<held_kv> quarantine_kv_;
  std::vector<held_slot> quarantine_slots_;
  struct write_lock {
    std::uint64_t until;  ///< unlocked once this batch ended
    node_ref node;
  };
  std::vector<write_lock> write_locks_;
  std::vector<writer_mark> read_waits_;
  batch_progress progress_;           ///< of the session's forwards (fence reports)
  std::uint64_t queried_tokens_ = 0;  ///< queried_tokens()
  struct pin_record {
    std::uint64_t id;
    node_ref node;
    std::uint64_t tokens;  ///< pinned_len, taken from cfg_.pinned_tokens
    clock_ns deadline;     ///< clock_ns::max(): no TTL
  };
  void drop_pin(const pin_record& p);
  std::vector<pin_record> pins_;
  std::uint64_t next_pin_ = 1;
  std::uint64_t pinned_tokens_ = 0;           ///< pinned_tokens()
  clock_ns next_deadline_ = clock_ns::max();  ///< the earliest deadline of pins_
};

}  // namespace hc
