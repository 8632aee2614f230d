#pragma once
// Per-call latencies of a benchmark, for percentiles (issue 19).
//
// Google Benchmark reports the mean time of an iteration. The figures hcbench is compared
// with are medians of single calls (SGLang's baseline: the median per-call latency of each
// run, ../shared/reference/sglang-baseline.md), and on this class of VM a mean is moved by
// rare slow calls — a first-touch page fault when the heap grows (~12 µs), a vCPU that was
// descheduled, the bimodal socket round trips of floors.md. So each timed call is also
// recorded here, and the benchmark reports p50_us / p99_us counters beside the mean.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace hc::bench {

/// The p-th percentile (0..1, nearest rank) of `v`, sorted in place. REQUIRES: !v.empty().
inline double percentile(std::vector<double>& v, double p) {
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

/// Collects one latency per timed call; on destruction sets the state's `<prefix>p50_us`
/// and `<prefix>p99_us` counters (none if nothing was recorded). Not thread-safe: one per
/// benchmark thread.
class call_latencies {
 public:
  using clock = std::chrono::steady_clock;

  explicit call_latencies(benchmark::State& st, std::string prefix = {},
                          std::size_t expected_calls = 1 << 16)
      : state_(st), prefix_(std::move(prefix)) {
    us_.reserve(expected_calls);
  }
  call_latencies(const call_latencies&) = delete;
  call_latencies& operator=(const call_latencies&) = delete;
  ~call_latencies() {
    if (us_.empty()) return;
    state_.counters[prefix_ + "p50_us"] = percentile(us_, 0.50);
    state_.counters[prefix_ + "p99_us"] = percentile(us_, 0.99);
  }

  /// Records a call that took `us` microseconds.
  void add(double us) { us_.push_back(us); }
  /// Records the call that started at t0 and ended now; also sets it as the iteration's
  /// manual time (benchmarks registered with UseManualTime).
  void stop(clock::time_point t0) {
    const std::chrono::duration<double> d = clock::now() - t0;
    state_.SetIterationTime(d.count());
    add(d.count() * 1e6);
  }
  /// Times f() and records it (not as manual time).
  template <class F>
  void time(F&& f) {
    const auto t0 = clock::now();
    f();
    add(std::chrono::duration<double, std::micro>(clock::now() - t0).count());
  }

 private:
  benchmark::State& state_;
  std::string prefix_;
  std::vector<double> us_;
};

}  // namespace hc::bench
