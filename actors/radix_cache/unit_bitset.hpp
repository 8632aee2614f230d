#pragma once
// One bit per pool unit (token or page id): the allocators' "is free" marks. Ranges are
// tested and set a 64-bit word at a time, so freeing a leaf's run of consecutive ids (the
// FIFO free list hands out runs, and a leaf's ids mostly are one) touches a word per 64 ids
// instead of a byte per id.
//
// Not thread-safe. Indices are REQUIRED to be below size() (callers range-check first).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hc {

class unit_bitset {
 public:
  /// n bits, all clear.
  void assign(std::size_t n) {
    size_ = n;
    words_.assign((n + 63) / 64, 0);
  }
  std::size_t size() const noexcept { return size_; }

  bool test(std::size_t i) const noexcept { return (words_[i / 64] >> (i % 64)) & 1u; }
  void set(std::size_t i) noexcept { words_[i / 64] |= bit(i); }
  void reset(std::size_t i) noexcept { words_[i / 64] &= ~bit(i); }

  /// True if any bit of [a, a + n) is set.
  bool any(std::size_t a, std::size_t n) const noexcept {
    bool hit = false;
    for_words(words_, a, n, [&](std::uint64_t w, std::uint64_t mask) { hit = hit || (w & mask); });
    return hit;
  }
  void set(std::size_t a, std::size_t n) noexcept {
    for_words(words_, a, n, [](std::uint64_t& w, std::uint64_t mask) { w |= mask; });
  }
  void reset(std::size_t a, std::size_t n) noexcept {
    for_words(words_, a, n, [](std::uint64_t& w, std::uint64_t mask) { w &= ~mask; });
  }

 private:
  static std::uint64_t bit(std::size_t i) noexcept { return std::uint64_t{1} << (i % 64); }
  /// f(word, mask of the range's bits in it) for each word [a, a + n) touches.
  template <class Words, class F>
  static void for_words(Words& words, std::size_t a, std::size_t n, F&& f) noexcept {
    while (n > 0) {
      const std::size_t off = a % 64;
      const std::size_t take = n < 64 - off ? n : 64 - off;
      const std::uint64_t mask = (take == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << take) - 1))
                                 << off;
      f(words[a / 64], mask);
      a += take;
      n -= take;
    }
  }

  std::size_t size_ = 0;
  std::vector<std::uint64_t> words_;
};

}  // namespace hc
