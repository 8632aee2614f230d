#pragma once
// A bounded double-ended queue of 32-bit ids: the free list behind the slot and row
// allocators (the KV allocator keeps its ids as runs: run_ring.hpp).
// Fixed capacity chosen at construction (the pool size), so it never reallocates; the
// buffer holds exactly that many ids (a power-of-two buffer would cost up to twice the
// pool's free list: 2 MiB instead of 1.5 MiB for a 384 k-token pool, BENCHMARKS.md §10.1).
//
// Thread safety: none; confined to its owner (the radix_cache actor).

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hc {

class id_ring {
 public:
  /// An empty ring that can hold up to `capacity` ids.
  explicit id_ring(std::size_t capacity = 0) { reset_capacity(capacity); }

  /// Drops the content and sets a new capacity.
  void reset_capacity(std::size_t capacity) {
    buf_.assign(capacity, 0);
    buf_.shrink_to_fit();
    head_ = 0;
    size_ = 0;
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::size_t capacity() const noexcept { return buf_.size(); }
  bool full() const noexcept { return size_ >= buf_.size(); }

  /// The i-th id from the front. REQUIRES: i < size().
  std::int32_t operator[](std::size_t i) const noexcept { return buf_[wrap(head_ + i)]; }

  /// REQUIRES: !full().
  void push_back(std::int32_t v) noexcept {
    assert(!full());
    buf_[wrap(head_ + size_)] = v;
    ++size_;
  }
  /// REQUIRES: !full().
  void push_front(std::int32_t v) noexcept {
    assert(!full());
    head_ = head_ == 0 ? buf_.size() - 1 : head_ - 1;
    buf_[head_] = v;
    ++size_;
  }
  /// Removes and returns the front id. REQUIRES: !empty().
  std::int32_t pop_front() noexcept {
    assert(!empty());
    std::int32_t v = buf_[head_];
    head_ = wrap(head_ + 1);
    --size_;
    return v;
  }
  /// Moves the first n ids into out (appended, front first; at most two block copies).
  /// REQUIRES: n <= size().
  void pop_front_into(std::size_t n, std::vector<std::int32_t>& out) {
    assert(n <= size_);
    const std::size_t first = std::min(n, buf_.size() - head_);
    out.insert(out.end(), buf_.begin() + static_cast<std::ptrdiff_t>(head_),
               buf_.begin() + static_cast<std::ptrdiff_t>(head_ + first));
    out.insert(out.end(), buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(n - first));
    head_ = wrap(head_ + n);
    size_ -= n;
  }
  void clear() noexcept {
    head_ = 0;
    size_ = 0;
  }

 private:
  /// The buffer position of x. REQUIRES: x < 2 * capacity() (a head plus at most a size).
  std::size_t wrap(std::size_t x) const noexcept { return x >= buf_.size() ? x - buf_.size() : x; }

  std::vector<std::int32_t> buf_;  ///< exactly capacity() ids
  std::size_t head_ = 0;           ///< position of the front id
  std::size_t size_ = 0;
};

}  // namespace hc
