// line_limiter / fault_reporter: every fault is counted; the log gets the first of each kind
// at once and then at most one line per kind per interval, which says how many went
// unlogged since — a failing disk (a fault per read) floods no log.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "actors/common/fault_log.hpp"
#include "actors/common/metrics_sink.hpp"
#include "tests/support/manual_clock.hpp"

namespace hc {
namespace {

using std::chrono::seconds;

TEST(LineLimiter, TheFirstOfAKindIsLoggedAtOnceAndTheRestOncePerInterval) {
  line_limiter lines(seconds(10));
  const clock_ns t0 = seconds(100);
  EXPECT_EQ(lines.line("l3_read_error", "pread x: Input/output error", t0),
            "pread x: Input/output error");
  for (int i = 1; i <= 5; ++i)
    EXPECT_EQ(lines.line("l3_read_error", "again", t0 + seconds(i)), std::nullopt) << i;
  // Another kind has its own streak.
  EXPECT_EQ(lines.line("client_gone", "session 3 ...", t0 + seconds(5)), "session 3 ...");
  // An interval after the last line: the latest, with the count of those not logged.
  EXPECT_EQ(lines.line("l3_read_error", "pread y: Input/output error", t0 + seconds(12)),
            "pread y: Input/output error (and 5 more of this kind, not logged, in the 12 s "
            "before it)");
  EXPECT_EQ(lines.line("l3_read_error", "z", t0 + seconds(13)), std::nullopt);
  // After a quiet spell with nothing held back, a line is logged at once and plainly.
  line_limiter quiet(seconds(10));
  ASSERT_TRUE(quiet.line("l3_timeout", "a", t0).has_value());
  EXPECT_EQ(quiet.line("l3_timeout", "b", t0 + seconds(60)), "b");
}

TEST(LineLimiter, AtTheIntervalIsPastIt) {
  line_limiter lines(seconds(10));
  ASSERT_TRUE(lines.line("k", "a", seconds(0)).has_value());
  EXPECT_FALSE(lines.line("k", "b", seconds(10) - clock_ns(1)).has_value());
  EXPECT_TRUE(lines.line("k", "c", seconds(10)).has_value());
}

TEST(LineLimiter, RemembersABoundedNumberOfKinds) {
  line_limiter lines(seconds(10));
  for (std::size_t i = 0; i < 3 * line_limiter::max_kinds; ++i) {
    EXPECT_TRUE(lines.line("kind " + std::to_string(i), "x", seconds(1)).has_value()) << i;
    EXPECT_LE(lines.kinds(), line_limiter::max_kinds);
  }
}

/// Counts faults by kind; everything else dropped.
class fault_counts final : public null_metrics {
 public:
  std::map<std::string, int, std::less<>> n;
  void fault(std::string_view kind) override { ++n[std::string(kind)]; }
};

TEST(FaultReporter, CountsEveryFaultAndLogsThemOncePerIntervalOnItsClock) {
  fault_counts counts;
  test::manual_clock time;
  fault_reporter report(counts, time, seconds(10));
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 100; ++i)
    report("l3_write_error", "an L3 backup stopped: pwrite: No space left on device");
  time.advance(seconds(11));
  report("l3_write_error", "the last one");
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(counts.n["l3_write_error"], 101) << "every fault counts";
  EXPECT_NE(log.find("warn  fault l3_write_error: an L3 backup stopped: pwrite: No space left "
                     "on device\n"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("fault l3_write_error: the last one (and 99 more of this kind, not "
                     "logged, in the 11 s before it)\n"),
            std::string::npos)
      << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 2) << log;
}

}  // namespace
}  // namespace hc
