#pragma once
// The index-plane half of a storage prefetch (cache-semantics.md §5.4, seed PR 26945):
// reserve L2 ids for the tokens a request could fetch from L3 — evicting host leaves, then
// truncating to the page-aligned free host size instead of giving up, skipping only below
// the threshold — and, when the bytes arrived, hang them in the tree as host-only nodes.
// The I/O half (existence check with the trailing-page rule, page reads in batches, the
// SSM object read only when every page arrived) belongs to host_storage; this class only
// sees its answers. Every prefetch ends in exactly one outcome, counted in outcomes().
//
// Thread safety: none; confined to the radix_cache actor (like the tree it edits).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "actors/common/tier_policy.hpp"
#include "actors/radix_cache/kv_allocator.hpp"
#include "actors/radix_cache/radix_tree.hpp"
#include "actors/radix_cache/slot_allocator.hpp"

namespace hc {

enum class prefetch_outcome : std::uint8_t {
  completed,                ///< every page the store had (and the SSM state) arrived
  truncated,                ///< host memory was short: a page-aligned prefix was fetched
  partial,                  ///< a read failed: the pages before it were kept
  skipped_below_threshold,  ///< too few tokens (asked, free on the host, or in the store)
  rate_limited,             ///< too many prefetched tokens already occupy the host
  timed_out,                ///< the timeout policy admitted the request first
  revoked,                  ///< the store held fewer than threshold usable tokens
  aborted,                  ///< the request went away
};
inline constexpr std::size_t prefetch_outcome_count = 8;
std::string_view to_string(prefetch_outcome o) noexcept;

struct prefetch_config {
  /// Fewer tokens than this are not prefetched (effective: max(threshold, page size)).
  std::size_t threshold_tokens = 256;
  prefetch_termination termination = prefetch_termination::best_effort;
  /// timeout policy: min(max, base + per_ki_token * tokens / 1024) seconds.
  double timeout_base_s = 2.0;
  double timeout_per_ki_token_s = 0.1;
  double timeout_max_s = 30.0;
};

/// The timeout of a prefetch of `tokens` tokens under the timeout policy.
double prefetch_timeout_s(const prefetch_config& cfg, std::size_t tokens) noexcept;

/// One prefetch in flight: what was reserved for it.
struct prefetch_ticket {
  node_ref anchor;                ///< last_host_node, host-protected while in flight
  std::vector<token_id> tokens;   ///< page-floored (and possibly truncated) tokens to fetch
  std::size_t requested = 0;      ///< page-floored tokens asked for
  std::vector<kv_index> host_kv;  ///< L2 ids reserved for `tokens`
  slot_id host_slot = no_slot;    ///< L2 slot reserved for the SSM state
  bool truncated = false;
};

class prefetch_planner {
 public:
  /// `device_kv_tokens` sizes the rate limit: prefetches may occupy at most
  /// 0.8 * (host tokens - device tokens). The tree must have a host tier on these pools.
  prefetch_planner(const prefetch_config& cfg, radix_tree& tree, kv_allocator& host_kv,
                   slot_allocator& host_slots, std::size_t device_kv_tokens);

  /// §5.4 prefetch_from_storage: `new_tokens` are the request's tokens after `anchor`
  /// (backed up, or root). A ticket, or the outcome that stopped it
  /// (skipped_below_threshold, rate_limited).
  std::variant<prefetch_ticket, prefetch_outcome> begin(node_ref anchor,
                                                        std::span<const token_id> new_tokens);

  /// The store's existence answer: `hit_tokens` usable from the start of ticket.tokens.
  /// Below the threshold the prefetch is revoked (everything released, returns revoked);
  /// otherwise the host ids past the hit are released and the ticket shrinks (nullopt).
  std::optional<prefetch_outcome> on_exists(prefetch_ticket& t, std::size_t hit_tokens);

  struct finish_result {
    prefetch_outcome outcome = prefetch_outcome::completed;
    std::size_t storage_hit_tokens = 0;  ///< new tokens now on the host
    std::size_t inserted_tokens = 0;     ///< tokens covered by the new nodes
  };
  /// The reads ended: the first `completed_tokens` arrived (a page multiple), and the SSM
  /// state if `state_read`. Inserts them as host-only nodes below the anchor, attaching
  /// the host slot to a new leaf only if the state was read, releases the rest and the
  /// protection. `timed_out`: the timeout policy admitted the request before the end.
  finish_result finish(prefetch_ticket& t, namespace_id ns, std::size_t completed_tokens,
                       bool state_read, bool timed_out);

  /// The request was aborted: release everything.
  void abort(prefetch_ticket& t);

  std::size_t occupied_tokens() const noexcept { return occupied_; }
  std::size_t capacity_limit() const noexcept { return limit_; }
  std::size_t threshold() const noexcept { return threshold_; }
  const prefetch_config& config() const noexcept { return cfg_; }
  const std::array<std::uint64_t, prefetch_outcome_count>& outcomes() const noexcept {
    return outcomes_;
  }

 private:
  prefetch_outcome count(prefetch_outcome o) noexcept;
  void release(prefetch_ticket& t, std::size_t keep_tokens);
  /// Releases the ticket's ids, slot and protection without counting an outcome.
  void abort_quietly(prefetch_ticket& t);

  prefetch_config cfg_;
  radix_tree& tree_;
  kv_allocator& host_kv_;
  slot_allocator& host_slots_;
  std::size_t threshold_;
  std::size_t limit_;
  std::size_t occupied_ = 0;
  std::array<std::uint64_t, prefetch_outcome_count> outcomes_{};
};

}  // namespace hc
