#pragma once
// A clock that moves only when a test says so (seastar's manual_clock, rocksdb's
// MockSystemClock): time-dependent decisions become deterministic event sequences.
#include <atomic>

#include "actors/common/clock.hpp"

namespace hc::test {

class manual_clock final : public clock {
 public:
  /// `tick`: how far every reading moves the clock (0: only advance() moves it). A small
  /// tick gives every measured duration a positive length, so rates are defined.
  explicit manual_clock(clock_ns tick = clock_ns(0)) : tick_(tick.count()) {}

  clock_ns now() const noexcept override { return clock_ns(ns_.fetch_add(tick_)); }
  /// Moves time forward by `d`; safe from any thread.
  void advance(clock_ns d) noexcept { ns_ += d.count(); }

 private:
  const clock_ns::rep tick_;
  mutable std::atomic<clock_ns::rep> ns_{1'000'000'000};
};

}  // namespace hc::test
