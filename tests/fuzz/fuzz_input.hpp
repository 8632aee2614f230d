#pragma once
// The fuzzer's bytes read as a stream of small decisions (what libFuzzer's
// FuzzedDataProvider does, but front to back and usable from GCC builds, where the corpus
// runner replays the same targets). Every read succeeds: past the end, reads give zeros.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

#include <unistd.h>

namespace hc::fuzz {

class fuzz_input {
 public:
  fuzz_input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  bool empty() const noexcept { return pos_ >= size_; }
  std::size_t remaining() const noexcept { return empty() ? 0 : size_ - pos_; }

  std::uint8_t byte() noexcept { return empty() ? 0 : data_[pos_++]; }
  bool flag() noexcept { return (byte() & 1) != 0; }
  /// Little-endian, `n` <= 8 bytes.
  std::uint64_t bits(std::size_t n) noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i)
      v |= std::uint64_t{byte()} << (8 * i);
    return v;
  }
  /// A value in [lo, hi] (inclusive), from as few bytes as the range needs.
  std::uint64_t range(std::uint64_t lo, std::uint64_t hi) noexcept {
    if (hi <= lo) return lo;
    const std::uint64_t span = hi - lo;
    const std::size_t n = span < 0x100 ? 1 : span < 0x10000 ? 2 : span < 0x1000000 ? 3 : 8;
    const std::uint64_t v = bits(n);
    return span == UINT64_MAX ? v : lo + v % (span + 1);
  }
  /// Mostly small numbers, sometimes a huge one (limits and overflow paths).
  std::uint64_t count(std::uint64_t small_max) noexcept {
    const std::uint8_t b = byte();
    if (b == 0xff) return bits(8);
    return b % (small_max + 1);
  }
  /// Up to `max` bytes, taken whole.
  std::span<const std::uint8_t> bytes(std::size_t max) noexcept {
    const std::uint64_t want = range(0, max);  // read first: it consumes input
    const std::size_t n = std::min<std::size_t>(want, remaining());
    std::span<const std::uint8_t> out(data_ + pos_, n);
    pos_ += n;
    return out;
  }
  std::string text(std::size_t max) {
    auto b = bytes(max);
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }
  /// Everything not read yet.
  std::span<const std::uint8_t> rest() noexcept {
    auto out = std::span<const std::uint8_t>(data_ + std::min(pos_, size_), remaining());
    pos_ = size_;
    return out;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

/// A finding: prints what broke and aborts, so libFuzzer keeps the input as a crash.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::abort();
}

/// The path of this process's one scratch file `/tmp/hc-fuzz-<stem>-<pid><suffix>`, for
/// a target that must hand its input to code that reads files. The file (if the target
/// created it) is removed when the process exits: a fuzzing run or a corpus replay leaves
/// nothing behind. Call it with one stem per process.
inline const std::string& scratch_file(const char* stem, const char* suffix) {
  static const std::string path =
      std::string("/tmp/hc-fuzz-") + stem + "-" + std::to_string(::getpid()) + suffix;
  static const bool registered = [] {
    std::atexit([] { ::unlink(path.c_str()); });
    return true;
  }();
  (void)registered;
  return path;
}

}  // namespace hc::fuzz
