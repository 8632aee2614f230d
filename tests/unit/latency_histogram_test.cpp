// hcsim's step-latency histogram: percentiles within one bucket (1/16) of the exact value,
// merges of worker histograms equal one histogram of everything, the sparse JSON form
// round-trips.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "tools/hcsim/latency_histogram.hpp"

namespace hc::sim {
namespace {

TEST(LatencyHistogram, PercentilesAreWithinOneBucketOfTheExactValue) {
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> dist(5.0, 1.5);  // microseconds: 1 .. ~100 k
  std::vector<std::uint64_t> us;
  latency_histogram h;
  for (int i = 0; i < 100000; ++i) {
    const auto v = static_cast<std::uint64_t>(dist(rng)) + 1;
    us.push_back(v);
    h.add_ns(v * 1000);
  }
  std::sort(us.begin(), us.end());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const std::uint64_t exact =
        us[static_cast<std::size_t>(q * static_cast<double>(us.size() - 1))];
    const std::uint64_t got = h.percentile_us(q);
    EXPECT_GE(got, exact) << q;
    EXPECT_LE(static_cast<double>(got), static_cast<double>(exact) * (1 + 1.0 / 16) + 1) << q;
  }
  EXPECT_EQ(h.max_us(), us.back());
  EXPECT_EQ(h.percentile_us(1.0), us.back());
  EXPECT_EQ(h.count(), us.size());
}

TEST(LatencyHistogram, MergedWorkersEqualOneHistogramAndTheSparseFormRoundTrips) {
  latency_histogram all, a, b, back;
  for (std::uint64_t v = 0; v < 5000; ++v) {
    const std::uint64_t ns = v * v * 37 + 1000;
    all.add_ns(ns);
    (v % 3 ? a : b).add_ns(ns);
  }
  a.merge(b);
  back.add_sparse(a.sparse(), a.max_us());
  for (double q : {0.0, 0.25, 0.5, 0.99, 1.0}) {
    EXPECT_EQ(a.percentile_us(q), all.percentile_us(q)) << q;
    EXPECT_EQ(back.percentile_us(q), all.percentile_us(q)) << q;
  }
  EXPECT_EQ(back.count(), all.count());
  EXPECT_EQ(latency_histogram{}.percentile_us(0.99), 0u);
}

}  // namespace
}  // namespace hc::sim
