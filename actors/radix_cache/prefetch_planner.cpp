#include "actors/radix_cache/prefetch_planner.hpp"

#include <algorithm>

#include "actors/common/invariant.hpp"

namespace hc {

std::string_view to_string(prefetch_outcome o) noexcept {
  switch (o) {
    case prefetch_outcome::completed:
      return "completed";
    case prefetch_outcome::truncated:
      return "truncated";
    case prefetch_outcome::partial:
      return "partial";
    case prefetch_outcome::skipped_below_threshold:
      return "skipped_below_threshold";
    case prefetch_outcome::rate_limited:
      return "rate_limited";
    case prefetch_outcome::timed_out:
      return "timed_out";
    case prefetch_outcome::revoked:
      return "revoked";
    case prefetch_outcome::aborted:
      return "aborted";
  }
  return "unknown";
}

double prefetch_timeout_s(const prefetch_config& cfg, std::size_t tokens) noexcept {
  const double t =
      cfg.timeout_base_s + cfg.timeout_per_ki_token_s * static_cast<double>(tokens) / 1024.0;
  return std::min(cfg.timeout_max_s, t);
}

prefetch_planner::prefetch_planner(const prefetch_config& cfg, radix_tree& tree,
                                   kv_allocator& host_kv, slot_allocator& host_slots,
                                   std::size_t device_kv_tokens)
    : cfg_(cfg),
      tree_(tree),
      host_kv_(host_kv),
      host_slots_(host_slots),
      threshold_(std::max(cfg.threshold_tokens, host_kv.page_size())) {
  const std::size_t host = host_kv.capacity();
  limit_ = host > device_kv_tokens ? (host - device_kv_tokens) * 4 / 5 : 0;
}

prefetch_outcome prefetch_planner::count(prefetch_outcome o) noexcept {
  ++outcomes_[static_cast<std::size_t>(o)];
  return o;
}

std::variant<prefetch_ticket, prefetch_outcome> prefetch_planner::begin(
    node_ref anchor, std::span<const token_id> new_tokens) {
  const std::size_t p = host_kv_.page_size();
  std::size_t len = new_tokens.size() / p * p;
  if (len < threshold_ || !tree_.valid(anchor))
    return count(prefetch_outcome::skipped_below_threshold);
  if (occupied_ >= limit_) return count(prefetch_outcome::rate_limited);

  prefetch_ticket t;
  t.anchor = anchor;
  t.requested = len;
  (void)tree_.protect_host(anchor);  // KV only: the anchor must not leave the host
  if (!host_kv_.alloc_extend(0, 0, len, t.host_kv)) {
    (void)tree_.evict_host(len);
    if (!host_kv_.alloc_extend(0, 0, len, t.host_kv)) {
      // Truncation (PR 26945): fetch the page-aligned part that fits instead of nothing.
      len = host_kv_.available() / p * p;
      if (len < threshold_ || !host_kv_.alloc_extend(0, 0, len, t.host_kv)) {
        (void)tree_.release_host(anchor);
        return count(prefetch_outcome::skipped_below_threshold);
      }
      t.truncated = true;
    }
  }
  t.host_slot = host_slots_.alloc_one();
  if (t.host_slot == no_slot) {
    (void)tree_.evict_mamba_host(1);
    t.host_slot = host_slots_.alloc_one();
  }
  if (t.host_slot == no_slot) {  // no room for the state: nothing usable fits
    must(host_kv_.free(t.host_kv), "freed KV ids that were allocated");
    (void)tree_.release_host(anchor);
    return count(prefetch_outcome::skipped_below_threshold);
  }
  (void)tree_.protect_host_mamba(anchor);
  t.tokens.assign(new_tokens.begin(), new_tokens.begin() + static_cast<std::ptrdiff_t>(len));
  occupied_ += len;
  return t;
}

void prefetch_planner::release(prefetch_ticket& t, std::size_t keep_tokens) {
  if (t.host_kv.size() > keep_tokens) {
    must(host_kv_.free(std::span<const kv_index>(t.host_kv).subspan(keep_tokens)),
         "freed KV ids that were allocated");
    t.host_kv.resize(keep_tokens);
  }
  occupied_ -= t.tokens.size() - keep_tokens;
  t.tokens.resize(keep_tokens);
}

std::optional<prefetch_outcome> prefetch_planner::on_exists(prefetch_ticket& t,
                                                            std::size_t hit_tokens) {
  const std::size_t p = host_kv_.page_size();
  hit_tokens = std::min(hit_tokens / p * p, t.tokens.size());
  if (hit_tokens < threshold_) {
    abort_quietly(t);
    return count(prefetch_outcome::revoked);
  }
  release(t, hit_tokens);
  return std::nullopt;
}

void prefetch_planner::abort_quietly(prefetch_ticket& t) {
  release(t, 0);
  if (t.host_slot != no_slot) {
    must(host_slots_.free_one(t.host_slot), "freed a slot that was allocated");
    t.host_slot = no_slot;
  }
  if (tree_.valid(t.anchor)) {
    (void)tree_.release_host_mamba(t.anchor);
    (void)tree_.release_host(t.anchor);
  }
  t.anchor = {};
}

void prefetch_planner::abort(prefetch_ticket& t) {
  abort_quietly(t);
  (void)count(prefetch_outcome::aborted);
}

prefetch_planner::finish_result prefetch_planner::finish(prefetch_ticket& t, namespace_id ns,
                                                         std::size_t completed_tokens,
                                                         bool state_read, bool timed_out) {
  const std::size_t p = host_kv_.page_size();
  completed_tokens = std::min(completed_tokens / p * p, t.tokens.size());
  const bool all_pages = completed_tokens == t.tokens.size();
  finish_result r;
  r.outcome = timed_out                   ? prefetch_outcome::timed_out
              : !all_pages || !state_read ? prefetch_outcome::partial
              : t.truncated               ? prefetch_outcome::truncated
                                          : prefetch_outcome::completed;
  const std::span<const token_id> key(t.tokens.data(), completed_tokens);
  const std::span<const kv_index> ids(t.host_kv.data(), completed_tokens);
  slot_id slot = state_read && all_pages ? t.host_slot : no_slot;
  if (completed_tokens > 0 && tree_.valid(t.anchor)) {
    auto ins = tree_.insert_host_only(ns, t.anchor, key, ids, slot);
    must(ins.ok(), "a prefetched prefix inserts under its anchor");
    if (ins.ok()) {
      r.storage_hit_tokens = completed_tokens - ins->already_present;
      r.inserted_tokens = ins->new_leaf ? r.storage_hit_tokens : 0;
      if (ins->new_leaf && slot != no_slot) t.host_slot = no_slot;  // the leaf holds it
    }
    // The tree owns (or freed) the completed ids now.
    t.host_kv.erase(t.host_kv.begin(),
                    t.host_kv.begin() + static_cast<std::ptrdiff_t>(completed_tokens));
    t.tokens.erase(t.tokens.begin(),
                   t.tokens.begin() + static_cast<std::ptrdiff_t>(completed_tokens));
    occupied_ -= completed_tokens;
  }
  abort_quietly(t);  // the unused tail, the unused slot, the protection
  (void)count(r.outcome);
  return r;
}

}  // namespace hc
