#pragma once
// One scheduler operation on a session, as data: the unit that crosses the RPC boundary
// and the actor mailboxes, and what `hcctl replay` sends (in-process or over RPC). A
// scheduling step is a batch of commands executed in order; every command gets its own
// result (an error in one does not stop the batch — the worker decides).
//
// Protocol v2: every kind is its own struct (cmd::*) with the fields it uses, each with one
// meaning; a command is the variant of them. A result carries what every command reports
// (error, pool occupancy, time) and the body of its kind (res::*; none for the kinds that
// only succeed or fail).
//
// Vocabulary header: standard library only.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "actors/common/ids.hpp"
#include "actors/common/status.hpp"

namespace hc {

/// The kinds, in the order of the command variant's alternatives (kind_of == index).
enum class cmd_kind : std::uint8_t {
  create,
  append,
  match,
  lock,
  unlock,
  alloc_req,
  alloc_kv,
  track,
  prepare_extend,
  prepare_decode,
  process_decode,
  cache_unfinished,
  finish,
  abort,
  not_admitted,
  evict,
  check,
  take_ops,
  lookup,
  prefetch,
  pin,
  unpin,
  demote,
};
inline constexpr std::size_t cmd_kind_count = 23;

/// Stable lowercase name ("cache_unfinished"); "?" for an out-of-range value.
const char* to_string(cmd_kind k) noexcept;

namespace cmd {

/// `count` tokens at token offset `at` of the session's shared token arena
/// (InstanceSpec.sharedTokens): a prompt passed by reference instead of in the command.
struct token_range {
  std::uint64_t at = 0;
  std::uint64_t count = 0;
  friend bool operator==(const token_range&, const token_range&) = default;
};

/// Registers request `req` (chosen by the worker, unique per session) with its prompt:
/// `tokens`, or, when `shared` is set (tokens then empty), the arena's tokens in that range,
/// which the node copies before the step runs (the worker may reuse them once it returned).
struct create {
  request_handle req = 0;
  namespace_id ns = 0;  ///< set by the node to the session's namespace
  std::vector<token_id> tokens;
  std::optional<token_range> shared;
  friend bool operator==(const create&, const create&) = default;
};
/// Appends generated tokens to req (`tokens`, or the arena's range as for create).
struct append {
  request_handle req = 0;
  std::vector<token_id> tokens;
  std::optional<token_range> shared;
  friend bool operator==(const append&, const append&) = default;
};
/// Prefix match of prompt[:input_len-1] with copy-on-write of the node's state.
struct match {
  request_handle req = 0;
  friend bool operator==(const match&, const match&) = default;
};
/// inc_lock_ref of req's last node.
struct lock {
  request_handle req = 0;
  friend bool operator==(const lock&, const lock&) = default;
};
/// dec_lock_ref of req's last node.
struct unlock {
  request_handle req = 0;
  friend bool operator==(const unlock&, const unlock&) = default;
};
/// Request row, working slot and ping-pong slots.
struct alloc_req {
  request_handle req = 0;
  friend bool operator==(const alloc_req&, const alloc_req&) = default;
};
/// `count` KV ids at row position `start`; with `to_end`, the rest of the request instead:
/// from the end of its row (after admission: its matched prefix) to its last token, so a
/// worker can admit a request and allocate its KV in the same step without knowing the
/// prefix length yet (`start` and `count` are then ignored).
struct alloc_kv {
  request_handle req = 0;
  std::uint64_t start = 0;
  std::uint64_t count = 0;
  bool to_end = false;
  friend bool operator==(const alloc_kv&, const alloc_kv&) = default;
};
/// A snapshot recorded at `seqlen`; `flip` flips next_track_idx.
struct track {
  request_handle req = 0;
  std::uint64_t seqlen = 0;
  bool flip = false;
  friend bool operator==(const track&, const track&) = default;
};
/// Prefill tracking for `count` tokens after `start`.
struct prepare_extend {
  request_handle req = 0;
  std::uint64_t start = 0;
  std::uint64_t count = 0;
  friend bool operator==(const prepare_extend&, const prepare_extend&) = default;
};
/// Decode tracking (lazy pre-allocation).
struct prepare_decode {
  request_handle req = 0;
  friend bool operator==(const prepare_decode&, const prepare_decode&) = default;
};
/// A decode step's result; `accepted_drafts` > 0 for speculative decoding.
struct process_decode {
  request_handle req = 0;
  bool finished = false;
  std::uint64_t accepted_drafts = 0;
  friend bool operator==(const process_decode&, const process_decode&) = default;
};
/// cache_unfinished_req with fill length `fill_len`.
struct cache_unfinished {
  request_handle req = 0;
  std::uint64_t fill_len = 0;
  friend bool operator==(const cache_unfinished&, const cache_unfinished&) = default;
};
/// cache_finished_req; `expected_len` > 0: the request's total length, checked against
/// what it committed (+1 for the last token).
struct finish {
  request_handle req = 0;
  std::uint64_t expected_len = 0;
  friend bool operator==(const finish&, const finish&) = default;
};
/// Release without insert (abort / retraction).
struct abort {
  request_handle req = 0;
  friend bool operator==(const abort&, const abort&) = default;
};
/// Frees the COW slot of a matched request that was not admitted.
struct not_admitted {
  request_handle req = 0;
  friend bool operator==(const not_admitted&, const not_admitted&) = default;
};
/// Evicts `tokens` KV tokens, then `slots` SSM slots.
struct evict {
  std::uint64_t tokens = 0;
  std::uint64_t slots = 0;
  friend bool operator==(const evict&, const evict&) = default;
};
/// Tree totals and invariants; `full`: the full sanity check (idle only).
struct check {
  bool full = false;
  friend bool operator==(const check&, const check&) = default;
};
/// Queues the deferred data ops of extend batch `reqs` for forward `batch`.
struct take_ops {
  std::vector<request_handle> reqs;
  std::uint64_t batch = 0;
  friend bool operator==(const take_ops&, const take_ops&) = default;
};
/// Matches `tokens` without a request: no COW, no lock; only the LRU moves (SGLang's
/// match_prefix for scheduling policies / routing): `tokens`, or the arena's range as for
/// create. `without_indices`: the result carries the lengths and no KV ids (what a router
/// or a scheduling policy needs).
struct lookup {
  namespace_id ns = 0;  ///< set by the node to the session's namespace
  std::vector<token_id> tokens;
  bool without_indices = false;
  std::optional<token_range> shared;
  friend bool operator==(const lookup&, const lookup&) = default;
};
/// Storage prefetch of req's prompt (§5.4): the first call starts it, later calls poll;
/// `admit_now`: the worker admits the request now.
struct prefetch {
  request_handle req = 0;
  bool admit_now = false;
  friend bool operator==(const prefetch&, const prefetch&) = default;
};
/// Keeps the cached resumable prefix of `tokens` (or the arena's range, as for create) on
/// the device: its nodes are locked as a request's matched prefix is, so no eviction takes
/// them, until `unpin`, the end of `ttl_ms` (0: no end) or the session's close. What an
/// agent or an API server asks for a system prompt or a conversation it will come back to
/// (cache control; the request-free counterpart of lock). With a host tier, the part of
/// the prefix on the host only is loaded back first, as a match's load-back. Not an SGLang
/// call: a session that never pins runs SGLang's exact semantics.
struct pin {
  namespace_id ns = 0;  ///< set by the node to the session's namespace
  std::vector<token_id> tokens;
  std::optional<token_range> shared;
  std::uint64_t ttl_ms = 0;
  friend bool operator==(const pin&, const pin&) = default;
};
/// Releases pin `pin` (the id a pin result gave) of this session.
struct unpin {
  std::uint64_t pin = 0;
  friend bool operator==(const unpin&, const unpin&) = default;
};
/// The cached path of `tokens` (or the arena's range, as for create) will not be needed
/// soon: take it off the device now, as eviction would take those nodes if they were the
/// least recent (radix_tree::demote_prefix): deepest first, only what no request or pin
/// holds and no other branch on the device extends. With a host tier it stays resumable
/// (demoted, after a backup if it had none); without one it is evicted. What an agent
/// asks when a conversation waits on a tool, or an API server when a session goes idle.
/// Not an SGLang call: a session that never demotes runs SGLang's exact semantics.
struct demote {
  namespace_id ns = 0;  ///< set by the node to the session's namespace
  std::vector<token_id> tokens;
  std::optional<token_range> shared;
  friend bool operator==(const demote&, const demote&) = default;
};

}  // namespace cmd

using command =
    std::variant<cmd::create, cmd::append, cmd::match, cmd::lock, cmd::unlock, cmd::alloc_req,
                 cmd::alloc_kv, cmd::track, cmd::prepare_extend, cmd::prepare_decode,
                 cmd::process_decode, cmd::cache_unfinished, cmd::finish, cmd::abort,
                 cmd::not_admitted, cmd::evict, cmd::check, cmd::take_ops, cmd::lookup,
                 cmd::prefetch, cmd::pin, cmd::unpin, cmd::demote>;
static_assert(std::variant_size_v<command> == cmd_kind_count);

inline cmd_kind kind_of(const command& c) noexcept {
  return static_cast<cmd_kind>(c.index());
}
/// The request a command is about; nullopt for evict, check, take_ops, lookup, pin, unpin
/// and demote.
std::optional<request_handle> request_of(const command& c) noexcept;

/// The prompt of a command that carries one — create, append, lookup, pin, demote: any kind
/// with a token list and an arena range — as pointers to those two fields; both null for
/// the other kinds. `C` is command or const command (the pointers follow its constness).
template <class C>
requires std::is_same_v<std::remove_const_t<C>, command>
auto prompt_fields(C& c) noexcept {
  constexpr bool ro = std::is_const_v<C>;
  struct fields {
    std::conditional_t<ro, const std::vector<token_id>*, std::vector<token_id>*> tokens = nullptr;
    std::conditional_t<ro, const std::optional<cmd::token_range>*, std::optional<cmd::token_range>*>
        shared = nullptr;
  };
  return std::visit(
      [](auto& x) -> fields {
        if constexpr (requires {
                        x.tokens.data();
                        x.shared.has_value();
                      })
          return {&x.tokens, &x.shared};
        else
          return {};
      },
      c);
}

/// Pool and tree occupancy after a command (what every trace op reports).
struct pool_state {
  std::uint64_t kv_avail = 0, slots_avail = 0, rows_avail = 0;
  std::uint64_t full_evictable = 0, full_protected = 0;
  std::uint64_t mamba_evictable = 0, mamba_protected = 0;
  friend bool operator==(const pool_state&, const pool_state&) = default;
};

namespace res {

struct match {
  std::uint64_t prefix_len = 0;   ///< resumable prefix (the request starts here)
  std::uint64_t kv_matched = 0;   ///< KV tokens matched, resumable or not (>= prefix_len)
  std::vector<kv_index> indices;  ///< of the prefix; empty when the session's rows are shared
  slot_id node_slot = no_slot;
  std::optional<std::uint64_t> branching;
  slot_id working = no_slot;
  std::uint64_t loaded_tokens = 0;  ///< of the prefix, loaded back from the host tier
  friend bool operator==(const match&, const match&) = default;
};
struct lookup {
  std::uint64_t prefix_len = 0;
  std::uint64_t kv_matched = 0;
  std::vector<kv_index> indices;
  slot_id node_slot = no_slot;
  std::optional<std::uint64_t> branching;
  friend bool operator==(const lookup&, const lookup&) = default;
};
struct alloc_req {
  row_id row = no_row;
  slot_id working = no_slot;
  std::optional<std::array<slot_id, 2>> pingpong;
  friend bool operator==(const alloc_req&, const alloc_req&) = default;
};
struct alloc_kv {
  std::vector<kv_index> indices;  ///< empty when the session's rows are shared
  friend bool operator==(const alloc_kv&, const alloc_kv&) = default;
};
struct track {
  slot_id keep_slot = no_slot;
  friend bool operator==(const track&, const track&) = default;
};
struct prepare_extend {
  bool mask = false;                ///< snapshot this step
  std::int64_t kernel_seqlen = -1;  ///< position the kernel tracks to
  slot_id track_slot = no_slot;
  friend bool operator==(const prepare_extend&, const prepare_extend&) = default;
};
struct prepare_decode {
  bool mask = false;
  slot_id track_slot = no_slot;
  friend bool operator==(const prepare_decode&, const prepare_decode&) = default;
};
struct cache_unfinished {
  bool inserted = false;
  std::uint64_t protected_len = 0;
  std::vector<kv_index> prefix;  ///< the request's KV ids after the insert; empty when the
                                 ///< session's rows are shared
  slot_id node_slot = no_slot;
  friend bool operator==(const cache_unfinished&, const cache_unfinished&) = default;
};
struct finish {
  bool inserted = false;
  std::uint64_t cached_len = 0;
  bool mamba_exist = false;
  friend bool operator==(const finish&, const finish&) = default;
};
struct evict {
  std::uint64_t tokens_evicted = 0, mamba_evicted = 0;
  std::uint64_t tokens_freed_total = 0, slots_freed_total = 0;
  friend bool operator==(const evict&, const evict&) = default;
};
struct check {
  std::uint64_t tree_tokens = 0, tree_slots = 0;
  bool sanity = true;
  std::string sanity_detail;
  friend bool operator==(const check&, const check&) = default;
};
struct take_ops {
  std::uint64_t snapshots = 0, clears = 0, cows = 0;
  friend bool operator==(const take_ops&, const take_ops&) = default;
};
/// The request may be admitted now (termination policy), the outcome once the prefetch
/// ended ("" while it runs; see prefetch_outcome), tokens it brought to the host tier.
struct prefetch {
  bool ready = false;
  std::string outcome;
  std::uint64_t storage_hit_tokens = 0;
  friend bool operator==(const prefetch&, const prefetch&) = default;
};
/// A pin: its id (0 when nothing of the prompt was cached: no pin was made), the
/// resumable prefix it holds on the device, and the KV tokens matched (>= pinned_len;
/// beyond pinned_len they have no state to resume from and are not held).
struct pin {
  std::uint64_t id = 0;
  std::uint64_t pinned_len = 0;
  std::uint64_t kv_matched = 0;
  std::uint64_t loaded_tokens = 0;  ///< of pinned_len, loaded back from the host tier
  friend bool operator==(const pin&, const pin&) = default;
};
/// What a demote did (radix_tree's demote_report): the prompt's tokens found in the tree,
/// the device KV demoted to the host or evicted now (whole nodes) with the slots freed,
/// the device KV that goes once the backups it queued are done, and what stays.
struct demote {
  std::uint64_t matched_tokens = 0;
  std::uint64_t demoted_tokens = 0;
  std::uint64_t evicted_tokens = 0;
  std::uint64_t slots_freed = 0;
  std::uint64_t deferred_tokens = 0;
  std::uint64_t kept_tokens = 0;
  friend bool operator==(const demote&, const demote&) = default;
};

}  // namespace res

/// A successful command's body: monostate for the kinds that report nothing of their own
/// (create, append, lock, unlock, process_decode, abort, not_admitted, unpin) and for
/// failures.
using result_body =
    std::variant<std::monostate, res::match, res::lookup, res::alloc_req, res::alloc_kv, res::track,
                 res::prepare_extend, res::prepare_decode, res::cache_unfinished, res::finish,
                 res::evict, res::check, res::take_ops, res::prefetch, res::pin, res::demote>;

struct command_result {
  errc code = errc::ok;
  std::string error;  ///< empty when code == ok
  pool_state pools;
  std::uint64_t elapsed_ns = 0;  ///< time inside the cache call
  result_body body;
  bool ok() const noexcept { return code == errc::ok; }
  /// The body as kind T; throws std::bad_variant_access if it is another (or none).
  template <class T>
  const T& as() const {
    return std::get<T>(body);
  }
  template <class T>
  const T* get_if() const noexcept {
    return std::get_if<T>(&body);
  }
  friend bool operator==(const command_result&, const command_result&) = default;
};

}  // namespace hc
