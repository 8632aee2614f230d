#pragma once
// A bounded double-ended queue of positive 32-bit ids that keeps runs of consecutive ids
// as two entries: the KV allocator's free list. The id sequence is exactly the one an
// id-by-id queue (id_ring) would hold — pushing a run appends its ids in order, and a push
// that continues the neighbouring run merges with it, which changes the representation,
// never the sequence. A leaf's ids are mostly one run, so freeing one appends two entries
// instead of writing ~470 ids into a cold buffer, and the initial list [1..N] is one run.
//
// Encoding: an entry with the top bit clear is a single id; an entry with it set is a run
// header (its first id in the low 31 bits) followed by an entry holding the run's length
// (>= 2). A run takes two entries for at least two ids, so the entries never outnumber the
// ids: the buffer starts small and doubles when the entries need it, never past `capacity`
// entries. A pool's free list is mostly a few runs, so it costs a few entries, not 4 bytes
// per pool id (index memory per cached token, BENCHMARKS.md §10.2).
//
// Thread safety: none; confined to its owner (the radix_cache actor).

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hc {

/// A run of consecutive ids: first, first + 1, ..., first + length - 1.
struct id_run {
  std::int32_t first = 0;
  std::uint32_t length = 0;
};

class run_ring {
 public:
  /// An empty ring that can hold up to `capacity` ids.
  explicit run_ring(std::size_t capacity = 0) { reset_capacity(capacity); }

  /// Drops the content (and the buffer) and sets a new capacity.
  void reset_capacity(std::size_t capacity) {
    capacity_ = capacity;
    std::vector<std::uint32_t>(std::min(capacity, initial_entries)).swap(buf_);
    clear();
  }
  void clear() noexcept {
    head_ = 0;
    entries_ = 0;
    ids_ = 0;
    back_is_run_ = false;
  }

  std::size_t size() const noexcept { return ids_; }  ///< ids, not entries
  bool empty() const noexcept { return ids_ == 0; }
  /// The most ids it holds.
  std::size_t capacity() const noexcept { return capacity_; }
  /// Entries in use (a single id: 1, a run: 2).
  std::size_t entries() const noexcept { return entries_; }
  /// Entries the buffer has room for now (<= capacity()).
  std::size_t buffer_entries() const noexcept { return buf_.size(); }

  /// f(run) for each run from the front (single ids as runs of length 1).
  template <class F>
  void for_each_run(F&& f) const {
    for (std::size_t i = 0; i < entries_;) {
      const std::uint32_t e = at(i);
      if (e & run_bit) {
        f(id_run{static_cast<std::int32_t>(e & ~run_bit), at(i + 1)});
        i += 2;
      } else {
        f(id_run{static_cast<std::int32_t>(e), 1});
        i += 1;
      }
    }
  }

  /// Appends first, first + 1, ..., first + n - 1. REQUIRES: first > 0, first + n - 1 fits
  /// in int32, size() + n <= capacity().
  void push_back_run(std::int32_t first, std::size_t n) {
    assert(first > 0 &&
           static_cast<std::int64_t>(first) + static_cast<std::int64_t>(n) - 1 <= INT32_MAX);
    assert(ids_ + n <= capacity_);
    if (n == 0) return;
    ids_ += n;
    const auto len = static_cast<std::uint32_t>(n);
    if (entries_ > 0) {
      std::uint32_t& last = ref(entries_ - 1);
      if (back_is_run_) {
        const std::uint32_t head = at(entries_ - 2) & ~run_bit;
        if (std::uint64_t{head} + last == static_cast<std::uint64_t>(first)) {
          last += len;  // continues the last run
          return;
        }
      } else if (std::uint64_t{last} + 1 == static_cast<std::uint64_t>(first)) {
        last |= run_bit;  // the last single id starts a run
        append(len + 1);
        back_is_run_ = true;
        return;
      }
    }
    if (n == 1) {
      append(static_cast<std::uint32_t>(first));
      back_is_run_ = false;
      return;
    }
    append(static_cast<std::uint32_t>(first) | run_bit);
    append(len);
    back_is_run_ = true;
  }

  /// Puts v in front. REQUIRES: v > 0, size() < capacity().
  void push_front(std::int32_t v) {
    assert(v > 0 && ids_ < capacity_);
    ++ids_;
    const auto id = static_cast<std::uint32_t>(v);
    if (entries_ > 0) {
      std::uint32_t& front = ref(0);
      if (front & run_bit) {
        if ((front & ~run_bit) == id + 1) {  // extends the front run downwards
          front = id | run_bit;
          ++ref(1);
          return;
        }
      } else if (front == id + 1) {  // the front single id becomes a run from v
        front = 2;                   // its entry now holds the length
        prepend(id | run_bit);
        if (entries_ == 2) back_is_run_ = true;
        return;
      }
    }
    prepend(id);
    if (entries_ == 1) back_is_run_ = false;
  }

  /// Puts first, first + 1, ..., first + n - 1 in front (as n push_front calls from the
  /// last id down would). REQUIRES: first > 0, first + n - 1 fits in int32,
  /// size() + n <= capacity().
  void push_front_run(std::int32_t first, std::size_t n) {
    assert(first > 0 &&
           static_cast<std::int64_t>(first) + static_cast<std::int64_t>(n) - 1 <= INT32_MAX);
    assert(ids_ + n <= capacity_);
    if (n == 0) return;
    if (n == 1 || entries_ == 0) {
      for (std::size_t i = n; i-- > 0;)
        push_front(first + static_cast<std::int32_t>(i));
      return;
    }
    const std::uint64_t end = static_cast<std::uint64_t>(first) + n;  // one past the run
    const std::uint32_t front = at(0);
    if (front & run_bit) {
      if ((front & ~run_bit) == end) {  // the front run continues this one
        ref(0) = static_cast<std::uint32_t>(first) | run_bit;
        ref(1) += static_cast<std::uint32_t>(n);
        ids_ += n;
        return;
      }
    } else if (front == end) {  // the front single id ends this run
      ref(0) = static_cast<std::uint32_t>(n + 1);
      prepend(static_cast<std::uint32_t>(first) | run_bit);
      if (entries_ == 2) back_is_run_ = true;
      ids_ += n;
      return;
    }
    prepend(static_cast<std::uint32_t>(n));
    prepend(static_cast<std::uint32_t>(first) | run_bit);
    ids_ += n;
  }

  /// Removes and returns the front id. REQUIRES: !empty().
  std::int32_t pop_front() noexcept {
    assert(!empty());
    std::int32_t v = 0;
    take_front(1, [&v](std::int32_t first, std::size_t) { v = first; });
    return v;
  }

  /// Moves the first n ids into out (appended, front first) and calls on_run(first, k) for
  /// each run they came from, in order. REQUIRES: n <= size().
  template <class F>
  void pop_front_into(std::size_t n, std::vector<std::int32_t>& out, F&& on_run) {
    assert(n <= ids_);
    std::size_t at_out = out.size();
    out.resize(at_out + n);
    std::int32_t* dst = out.data();
    while (n > 0) {
      const std::size_t k = take_front(n, [&](std::int32_t first, std::size_t len) {
        for (std::size_t i = 0; i < len; ++i)
          dst[at_out + i] = first + static_cast<std::int32_t>(i);
        on_run(first, len);
      });
      at_out += k;
      n -= k;
    }
  }

 private:
  static constexpr std::uint32_t run_bit = 0x80000000u;
  static constexpr std::size_t initial_entries = 16;

  std::size_t wrap(std::size_t x) const noexcept { return x >= buf_.size() ? x - buf_.size() : x; }
  /// The i-th entry from the front. REQUIRES: i < entries_ (or the slot being written).
  std::uint32_t at(std::size_t i) const noexcept { return buf_[wrap(head_ + i)]; }
  std::uint32_t& ref(std::size_t i) noexcept { return buf_[wrap(head_ + i)]; }
  void append(std::uint32_t e) {
    if (entries_ == buf_.size()) grow();
    buf_[wrap(head_ + entries_)] = e;
    ++entries_;
  }
  void prepend(std::uint32_t e) {
    if (entries_ == buf_.size()) grow();
    head_ = head_ == 0 ? buf_.size() - 1 : head_ - 1;
    buf_[head_] = e;
    ++entries_;
  }
  /// Doubles the buffer (up to capacity_ entries), the entries moved to its start. Callers
  /// hold no entry reference across it.
  void grow() {
    assert(buf_.size() < capacity_ && "entries never outnumber ids");
    std::vector<std::uint32_t> bigger(
        std::min(capacity_, std::max(buf_.size() * 2, initial_entries)));
    for (std::size_t i = 0; i < entries_; ++i)
      bigger[i] = at(i);
    buf_.swap(bigger);
    head_ = 0;
  }
  void drop_entries(std::size_t k) noexcept {
    head_ = wrap(head_ + k);
    entries_ -= k;
    if (entries_ == 0) back_is_run_ = false;
  }
  /// Takes up to `n` (>= 1) ids from the front entry, calls f(first, k) once and returns k.
  template <class F>
  std::size_t take_front(std::size_t n, F&& f) noexcept {
    const std::uint32_t e = at(0);
    if (!(e & run_bit)) {
      f(static_cast<std::int32_t>(e), 1);
      drop_entries(1);
      --ids_;
      return 1;
    }
    const std::uint32_t first = e & ~run_bit;
    const std::uint32_t len = at(1);
    const std::size_t k = n < len ? n : len;
    f(static_cast<std::int32_t>(first), k);
    ids_ -= k;
    const std::uint32_t rest = len - static_cast<std::uint32_t>(k);
    const std::uint32_t next = first + static_cast<std::uint32_t>(k);
    if (rest == 0) {
      drop_entries(2);
    } else if (rest == 1) {  // one id left: a single entry where the length was
      ref(1) = next;
      drop_entries(1);
      if (entries_ == 1) back_is_run_ = false;
    } else {
      ref(0) = next | run_bit;
      ref(1) = rest;
    }
    return k;
  }

  std::size_t capacity_ = 0;        ///< the most ids held
  std::vector<std::uint32_t> buf_;  ///< the entries, wrapping; grows up to capacity_
  std::size_t head_ = 0;            ///< position of the front entry
  std::size_t entries_ = 0;
  std::size_t ids_ = 0;
  bool back_is_run_ = false;  ///< the last entry is a run's length (not a single id)
};

}  // namespace hc
