#pragma once
// The tokens live requests hold over every session of a node: each request's prompt and
// appended outputs, which the node keeps to match and cache them (with the KV ids of its
// row, about 8 bytes a token), and request_record_tokens for the request itself. A create
// or append that would pass the limit is refused, so one worker that leaks requests (never
// finishes or aborts them) cannot take the node's memory from every other tenant.
//
// Thread safety: take / give / held from any thread (each session's request_manager runs
// on its instance's actor).

#include <atomic>
#include <cstdint>

namespace hc {

/// What one live request's bookkeeping costs (its record, ~270 bytes with its map entry)
/// counted as tokens of ~8 bytes, so that a flood of one-token requests is bounded too.
inline constexpr std::uint64_t request_record_tokens = 32;

class token_budget {
 public:
  /// `limit` tokens at most; 0 = no limit (only counted).
  explicit token_budget(std::uint64_t limit) noexcept : limit_(limit) {}
  token_budget(const token_budget&) = delete;
  token_budget& operator=(const token_budget&) = delete;

  /// Takes n tokens; false (nothing taken) when held + n would pass the limit.
  bool take(std::uint64_t n) noexcept {
    std::uint64_t now = held_.load(std::memory_order_relaxed);
    do {
      if (limit_ != 0 && (n > limit_ || now > limit_ - n)) return false;
    } while (!held_.compare_exchange_weak(now, now + n, std::memory_order_relaxed));
    return true;
  }
  /// Gives back n tokens taken before.
  void give(std::uint64_t n) noexcept { held_.fetch_sub(n, std::memory_order_relaxed); }
  std::uint64_t held() const noexcept { return held_.load(std::memory_order_relaxed); }
  std::uint64_t limit() const noexcept { return limit_; }

 private:
  const std::uint64_t limit_;
  std::atomic<std::uint64_t> held_{0};
};

}  // namespace hc
