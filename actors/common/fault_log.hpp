#pragma once
// The faults the node survives (README, Reliability, Faults), in its log with what went
// wrong: the metrics count them, a line says which file, which errno, which client. A
// failing disk or a flood of bad clients gives a fault per call, so each kind is logged at
// most once per interval: the first of a streak at once, then the latest with how many
// went unlogged since. Pure: standard library only.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "actors/common/clock.hpp"

namespace hc {

class metrics_sink;

/// Which faults to log, and their lines ("fault KIND: DETAIL"). Not thread-safe; times
/// are given, so tests choose them.
class fault_lines {
 public:
  /// interval: the least time between two lines of one kind.
  explicit fault_lines(clock_ns interval) noexcept : interval_(interval) {}

  /// The line to log for a fault of `kind` at `now`, or nullopt when a line of its kind
  /// was logged less than the interval before (the fault is then counted, and the next
  /// line of the kind says how many such were not logged).
  std::optional<std::string> line(std::string_view kind, std::string_view detail, clock_ns now);

 private:
  struct streak {
    clock_ns last_line{};        ///< when a line of this kind was last logged
    std::uint64_t unlogged = 0;  ///< faults of this kind since, not logged
  };
  clock_ns interval_;
  std::map<std::string, streak, std::less<>> kinds_;
};

/// How often one kind of fault may reach the log: 10 s.
inline constexpr clock_ns fault_log_interval = std::chrono::seconds(10);

/// Reports the faults of one component (an actor, the RPC thread): counts each in the
/// metrics (metrics_sink::fault) and logs it as a warning with what failed and why, at
/// most one line per kind per interval (fault_lines). Used from one thread at a time, as
/// its owner runs; the metrics and the clock must outlive it.
class fault_reporter {
 public:
  fault_reporter(metrics_sink& metrics, const clock& time,
                 clock_ns interval = fault_log_interval) noexcept
      : metrics_(&metrics), time_(&time), lines_(interval) {}

  /// One fault of `kind` (metrics_sink::fault's kinds); `detail` says what failed and why.
  void operator()(std::string_view kind, std::string_view detail);

 private:
  metrics_sink* metrics_;
  const clock* time_;
  fault_lines lines_;
};

}  // namespace hc
