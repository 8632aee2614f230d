#pragma once
// One scheduler operation on a session, as data: the unit that crosses the RPC boundary
// and the actor mailboxes, and what `hcctl replay` sends (in-process or over RPC). A
// scheduling step is a batch of commands executed in order; every command gets its own
// result (an error in one does not stop the batch — the worker decides).
//
// Vocabulary header: standard library only.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actors/common/ids.hpp"
#include "actors/common/status.hpp"

namespace hc {

enum class cmd_kind : std::uint8_t {
  create,            ///< register req with prompt `tokens` in namespace `ns`
  append,            ///< append generated `tokens` to req
  match,             ///< match prompt[:input_len-1] with COW
  lock,              ///< inc_lock_ref of req's last node
  unlock,            ///< dec_lock_ref of req's last node
  alloc_req,         ///< row, working slot, ping-pong
  alloc_kv,          ///< `n` KV ids at row position `start`
  track,             ///< record a snapshot at `seqlen`; `flag` = flip next_track_idx
  prepare_extend,    ///< prefill tracking for `n` tokens after `start`
  prepare_decode,    ///< decode tracking (lazy prealloc)
  process_decode,    ///< decode result; `flag` = finished; `n` = accepted drafts (spec)
  cache_unfinished,  ///< cache_unfinished_req with fill_len `n`
  finish,            ///< cache_finished_req; `n` > 0: expected total length (check)
  abort,             ///< release without insert
  not_admitted,      ///< free the COW slot of a matched, not admitted request
  evict,             ///< evict(`n` tokens, `m` slots)
  check,             ///< tree totals; `flag`: full sanity check (idle only)
  take_ops,          ///< deferred data ops for extend batch `reqs` (handed to the stream)
  lookup,            ///< match `tokens` without a request: no COW, no lock; only the LRU
                     ///< moves (SGLang's match_prefix for scheduling policies / routing)
  prefetch,          ///< storage prefetch of req's prompt (§5.4): the first call starts it,
                     ///< later calls poll; `flag` = the worker admits the request now
};
inline constexpr std::size_t cmd_kind_count = 20;

/// Stable lowercase name ("cache_unfinished"); "?" for an out-of-range value.
const char* to_string(cmd_kind k) noexcept;

struct command {
  cmd_kind kind = cmd_kind::check;
  request_handle req = 0;
  namespace_id ns = 0;               ///< create, lookup (the node sets the session's)
  std::vector<token_id> tokens;      ///< create, append, lookup
  std::vector<request_handle> reqs;  ///< take_ops
  std::uint64_t start = 0;           ///< alloc_kv, prepare_extend
  std::uint64_t n = 0;               ///< see cmd_kind
  std::uint64_t m = 0;               ///< evict
  std::uint64_t seqlen = 0;          ///< track
  bool flag = false;                 ///< see cmd_kind
  std::uint64_t batch = 0;           ///< take_ops: the forward batch consuming the ops
  friend bool operator==(const command&, const command&) = default;
};

/// Pool and tree occupancy after a command (what every trace op reports).
struct pool_state {
  std::uint64_t kv_avail = 0, slots_avail = 0, rows_avail = 0;
  std::uint64_t full_evictable = 0, full_protected = 0;
  std::uint64_t mamba_evictable = 0, mamba_protected = 0;
  friend bool operator==(const pool_state&, const pool_state&) = default;
};

struct command_result {
  errc code = errc::ok;
  std::string error;  ///< empty when code == ok
  std::uint64_t prefix_len = 0;
  std::uint64_t kv_matched = 0;   ///< match: KV tokens matched (resumable or not)
  std::vector<kv_index> indices;  ///< match / alloc_kv / cache_unfinished prefix
  slot_id node_slot = no_slot;
  std::optional<std::uint64_t> branching;
  slot_id working = no_slot;
  row_id row = no_row;
  std::optional<std::array<slot_id, 2>> pingpong;
  slot_id slot = no_slot;           ///< track: keep slot; prepare_*: track slot
  bool mask = false;                ///< prepare_*: snapshot this step
  std::int64_t kernel_seqlen = -1;  ///< prepare_extend: position the kernel tracks to
  bool inserted = false;            ///< cache_unfinished / finish
  bool mamba_exist = false;
  std::uint64_t tokens_evicted = 0, mamba_evicted = 0;
  std::uint64_t tokens_freed_total = 0, slots_freed_total = 0;
  std::uint64_t tree_tokens = 0, tree_slots = 0;
  bool sanity = true;
  std::string sanity_detail;
  std::uint64_t ops_snapshots = 0, ops_clears = 0, ops_cows = 0;  ///< take_ops
  pool_state pools;
  std::uint64_t elapsed_ns = 0;     ///< time inside the cache call
  std::uint64_t loaded_tokens = 0;  ///< match: tokens loaded back from the host tier
  /// prefetch: the request may be admitted now (termination policy), the outcome once the
  /// prefetch ended ("" while it runs; see prefetch_outcome), tokens it brought to the host.
  bool prefetch_ready = false;
  std::string prefetch_outcome;
  std::uint64_t storage_hit_tokens = 0;
  bool ok() const noexcept { return code == errc::ok; }
  friend bool operator==(const command_result&, const command_result&) = default;
};

}  // namespace hc
