// must(): an internal invariant that holds is free; a broken one is counted (and stops a
// debug build at the assert), and the count reaches /metrics.
#include <gtest/gtest.h>

#include <cstring>

#include "actors/common/invariant.hpp"
#include "monitoring/prometheus_metrics.hpp"

namespace hc::test {
namespace {

TEST(Invariant, AnInvariantThatHoldsIsNotCounted) {
  const std::uint64_t before = invariant_violations();
  EXPECT_TRUE(must(true, "holds"));
  EXPECT_TRUE(must(status{}, "ok status"));
  EXPECT_EQ(invariant_violations(), before);
}

#ifdef NDEBUG
TEST(Invariant, ABrokenInvariantIsCountedAndNamed) {
  const std::uint64_t before = invariant_violations();
  EXPECT_FALSE(must(status{errc::invalid_argument, "double free"}, "test: a double free"));
  EXPECT_FALSE(must(false, "test: a second one"));
  EXPECT_EQ(invariant_violations(), before + 2);
  if (before == 0) {
    EXPECT_STREQ(first_invariant_violation(), "test: a double free");
  }
  prometheus_metrics m;
  EXPECT_NE(m.text().find("hybridcache_invariant_violations_total " + std::to_string(before + 2)),
            std::string::npos)
      << m.text();
}
#else
TEST(InvariantDeathTest, ABrokenInvariantStopsADebugBuild) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(must(false, "test: broken"), "internal invariant violated");
}
TEST(Invariant, TheCountIsExportedToMetrics) {
  prometheus_metrics m;
  EXPECT_NE(m.text().find("hybridcache_invariant_violations_total 0"), std::string::npos)
      << m.text();
}
#endif

}  // namespace
}  // namespace hc::test
