#pragma once
// Step latencies of hcsim's workers, mergeable across worker processes: a log-linear
// histogram of microseconds (16 buckets per power of two, so a percentile is within 1/16 =
// 6.25 % of the true value), counts kept exactly. No Debian package offers one for C++
// (HdrHistogram is packaged for Go and Java only).

#include <array>
#include <bit>
#include <cstdint>
#include <vector>

namespace hc::sim {

class latency_histogram {
 public:
  static constexpr unsigned sub_bits = 4;  ///< 16 buckets per power of two
  static constexpr std::size_t buckets = (64 - sub_bits + 1) << sub_bits;

  void add_ns(std::uint64_t ns) noexcept {
    const std::uint64_t us = ns / 1000;
    ++counts_[index_of(us)];
    ++total_;
    if (us > max_us_) max_us_ = us;
  }
  void merge(const latency_histogram& o) noexcept {
    for (std::size_t i = 0; i < buckets; ++i)
      counts_[i] += o.counts_[i];
    total_ += o.total_;
    if (o.max_us_ > max_us_) max_us_ = o.max_us_;
  }
  std::uint64_t count() const noexcept { return total_; }
  std::uint64_t max_us() const noexcept { return max_us_; }
  /// The upper bound (µs) of the bucket holding quantile q in [0, 1]; 0 when empty.
  std::uint64_t percentile_us(double q) const noexcept {
    if (total_ == 0) return 0;
    const auto rank = static_cast<std::uint64_t>(q * static_cast<double>(total_ - 1)) + 1;
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < buckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::min(upper_of(i), max_us_);
    }
    return max_us_;
  }
  /// Sparse form for the JSON report: (bucket, count) pairs of the non-empty buckets.
  std::vector<std::array<std::uint64_t, 2>> sparse() const {
    std::vector<std::array<std::uint64_t, 2>> out;
    for (std::size_t i = 0; i < buckets; ++i)
      if (counts_[i]) out.push_back({i, counts_[i]});
    return out;
  }
  void add_sparse(const std::vector<std::array<std::uint64_t, 2>>& s, std::uint64_t max_us) {
    for (const auto& [i, n] : s)
      if (i < buckets) {
        counts_[i] += n;
        total_ += n;
      }
    if (max_us > max_us_) max_us_ = max_us;
  }

 private:
  static std::size_t index_of(std::uint64_t v) noexcept {
    if (v < (1u << sub_bits)) return static_cast<std::size_t>(v);
    const unsigned msb = 63 - static_cast<unsigned>(std::countl_zero(v));
    const unsigned shift = msb - sub_bits;
    const std::uint64_t sub = (v >> shift) & ((1u << sub_bits) - 1);
    return ((shift + 1) << sub_bits) + static_cast<std::size_t>(sub);
  }
  static std::uint64_t upper_of(std::size_t i) noexcept {
    if (i < (1u << sub_bits)) return i;
    const std::size_t shift = (i >> sub_bits) - 1;
    const std::uint64_t sub = i & ((1u << sub_bits) - 1);
    return (((std::uint64_t{1} << sub_bits) | sub) << shift) + ((std::uint64_t{1} << shift) - 1);
  }

  std::array<std::uint64_t, buckets> counts_{};
  std::uint64_t total_ = 0;
  std::uint64_t max_us_ = 0;
};

}  // namespace hc::sim
