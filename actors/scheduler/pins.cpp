// request_manager's pins (cmd::pin / cmd::unpin): a cached prefix held on the device
// without a request, by the lock a request's matched prefix takes (inc_lock_ref).

#include <algorithm>
#include <string>

#include "actors/common/invariant.hpp"
#include "actors/scheduler/request_manager.hpp"

namespace hc {
namespace {

std::string pin_name(std::uint64_t id) {
  return "pin " + std::to_string(id);
}

}  // namespace

std::shared_ptr<token_budget> make_pin_budget(const radix_cache& cache) {
  const auto limit = static_cast<double>(cache.kv().capacity()) * max_pinned_share;
  return std::make_shared<token_budget>(
      std::max<std::uint64_t>(1, static_cast<std::uint64_t>(limit)));
}

result<pin_info> request_manager::pin(namespace_id ns, std::span<const token_id> tokens,
                                      std::uint64_t ttl_ms, clock_ns now) {
  if (ttl_ms > max_pin_ttl_ms)
    return error{errc::invalid_argument, "pin: ttlMs = " + std::to_string(ttl_ms) +
                                             " is over the limit " +
                                             std::to_string(max_pin_ttl_ms) + " (7 days)"};
  if (pins_.size() >= max_pins_per_session)
    return error{errc::out_of_memory, "pin: the session holds " + std::to_string(pins_.size()) +
                                          " pins, the most one session may: unpin some"};
  pin_info info;
  match_result m;
  if (cache_.has_host_tier()) {
    // As a request's match: what is on the host only is loaded back to the device first
    // (the copies run before the next forward of any session, so whoever reads the
    // prefix reads the loaded bytes), and the pin holds the whole resumable prefix.
    cow_match_result c = cache_.match(ns, tokens, /*cow=*/false, /*has_working_slot=*/false);
    m = std::move(c.match);
    m.prefix_len = m.indices.size();
    info.loaded_tokens = c.loaded_tokens;
  } else {
    m = cache_.tree().match(ns, tokens, match_ids::leave_out);
  }
  info.kv_matched = std::max(m.kv_matched, m.prefix_len);
  if (m.prefix_len == 0) return info;  // nothing resumable is cached: nothing to hold
  token_budget& budget = *cfg_.pinned_tokens;
  if (!budget.take(m.prefix_len))
    return error{errc::out_of_memory, "pin: " + std::to_string(m.prefix_len) +
                                          " more pinned tokens would pass the " +
                                          "instance's limit (" + std::to_string(budget.held()) +
                                          " of " + std::to_string(budget.limit()) +
                                          " held, half its KV pool): unpin or let pins expire"};
  if (status s = cache_.tree().inc_lock(m.last_node); !s) {
    budget.give(m.prefix_len);
    return s.err();
  }
  const clock_ns deadline =
      ttl_ms == 0 ? clock_ns::max()
                  : now + std::chrono::duration_cast<clock_ns>(std::chrono::milliseconds(ttl_ms));
  pins_.push_back({next_pin_, m.last_node, m.prefix_len, deadline});
  pinned_tokens_ += m.prefix_len;
  next_deadline_ = std::min(next_deadline_, deadline);
  info.id = next_pin_++;
  info.pinned_len = m.prefix_len;
  return info;
}

void request_manager::drop_pin(const pin_record& p) {
  must(cache_.tree().dec_lock(p.node), "a pinned node stays in the tree while it is locked");
  cfg_.pinned_tokens->give(p.tokens);
  pinned_tokens_ -= p.tokens;
}

status request_manager::unpin(std::uint64_t id) {
  auto it =
      std::find_if(pins_.begin(), pins_.end(), [id](const pin_record& p) { return p.id == id; });
  if (it == pins_.end())
    return {errc::not_found, "unpin: " + pin_name(id) +
                                 " is not held by this session (never made, released or expired)"};
  drop_pin(*it);
  pins_.erase(it);
  return {};
}

std::size_t request_manager::expire_pins(clock_ns now) {
  if (now < next_deadline_) return 0;
  const auto due = std::stable_partition(pins_.begin(), pins_.end(),
                                         [now](const pin_record& p) { return p.deadline <= now; });
  const auto n = static_cast<std::size_t>(due - pins_.begin());
  for (auto it = pins_.begin(); it != due; ++it)
    drop_pin(*it);
  pins_.erase(pins_.begin(), due);
  next_deadline_ = clock_ns::max();
  for (const pin_record& p : pins_)
    next_deadline_ = std::min(next_deadline_, p.deadline);
  return n;
}

void request_manager::release_pins() {
  for (const pin_record& p : pins_)
    drop_pin(p);
  pins_.clear();
  next_deadline_ = clock_ns::max();
}

}  // namespace hc
