#pragma once
// The one source of time (design/style.md habit 5). Logic never reads a clock of its
// own: whoever decides with time (prefetch timeouts and deadlines) or measures it (stats)
// is handed a `const clock&`. The node uses steady(); tests use a manual clock they
// advance (tests/support/manual_clock.hpp). Vocabulary header: standard library only.

#include <chrono>
#include <cstdint>

namespace hc {

/// Monotonic nanoseconds since an arbitrary epoch.
using clock_ns = std::chrono::nanoseconds;

/// A monotonic clock. Thread safety: implementations are safe to read from any thread.
class clock {
 public:
  virtual ~clock() = default;
  /// Never goes backwards.
  virtual clock_ns now() const noexcept = 0;
};

/// std::chrono::steady_clock as a clock. The object lives for the whole process.
const clock& steady() noexcept;

/// Seconds from `from` to `to` (negative if `to` is earlier).
constexpr double seconds_between(clock_ns from, clock_ns to) noexcept {
  return std::chrono::duration<double>(to - from).count();
}

/// `s` seconds as a clock duration (rounded towards zero).
constexpr clock_ns from_seconds(double s) noexcept {
  return std::chrono::duration_cast<clock_ns>(std::chrono::duration<double>(s));
}

}  // namespace hc
