#pragma once
// The faults the node survives (README, Reliability, Faults), in its log with what went
// wrong: the metrics count them, a line says which file, which errno, which client. A
// failing disk or a flood of bad clients gives a fault per call, so each kind is logged at
// most once per interval: the first of a streak at once, then the latest with how many
// went unlogged since (line_limiter, which the L3 store's RocksDB lines go through too).
// Pure: standard library only.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "actors/common/clock.hpp"

namespace hc {

class metrics_sink;

/// Log lines of a kind (a fault's kind, a RocksDB message's source) at most once per
/// interval: the first at once, then, an interval after the last line, the latest — with
/// how many of its kind were not logged meanwhile. Not thread-safe; times are given, so
/// tests choose them.
class line_limiter {
 public:
  /// interval: the least time between two lines of one kind.
  explicit line_limiter(clock_ns interval) noexcept : interval_(interval) {}

  /// `text` to log now for a line of `kind`, with " (and N more of this kind, not logged,
  /// in the S s before it)" when some were held back; nullopt while a line of its kind was
  /// logged less than the interval before (this one is then counted).
  std::optional<std::string> line(std::string_view kind, std::string_view text, clock_ns now);

  /// Kinds it remembers: at most max_kinds — past them it forgets them all and starts
  /// again, so kinds drawn from text (a RocksDB line without its source tag) cannot grow it
  /// without bound.
  std::size_t kinds() const noexcept { return kinds_.size(); }
  static constexpr std::size_t max_kinds = 1024;

 private:
  struct streak {
    clock_ns last_line{};        ///< when a line of this kind was last logged
    std::uint64_t unlogged = 0;  ///< lines of this kind since, not logged
  };
  clock_ns interval_;
  std::map<std::string, streak, std::less<>> kinds_;
};

/// How often one kind of fault may reach the log: 10 s.
inline constexpr clock_ns fault_log_interval = std::chrono::seconds(10);

/// Reports the faults of one component (an actor, the RPC thread): counts each in the
/// metrics (metrics_sink::fault) and logs it as a warning with what failed and why, at
/// most one line per kind per interval (line_limiter). Used from one thread at a time, as
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
  line_limiter lines_;
};

}  // namespace hc
