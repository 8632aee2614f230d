#pragma once
// Fault injection for L3 tests: wraps a real store and fails writes, fails or slows reads,
// or corrupts values behind the store's back, on the keys or after the counts configured.
// A slow read takes its time on the test's manual clock (the clock the node under test
// reads), never on the wall clock; reads (and, apart, existence checks) can also be held
// until the test releases them.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>

#include "storage/l3_store.hpp"
#include "tests/support/manual_clock.hpp"

namespace hc::test {

class faulty_store final : public l3_store {
 public:
  /// `time`: the clock slow reads advance (required for read_delay); outlives the store.
  explicit faulty_store(l3_store& inner, manual_clock* time = nullptr)
      : inner_(inner), time_(time) {}

  /// Writes fail (with write_error) once `n` more writes have succeeded; SIZE_MAX = never.
  std::size_t fail_writes_after = SIZE_MAX;
  /// How failed writes fail: io_error, or out_of_memory (a full disk).
  errc write_error = errc::io_error;
  /// Reads of these keys fail with io_error.
  std::set<std::string> fail_reads;
  /// What usage() says of the index's failures to write (rocksdb_store's; 0 here).
  std::atomic<std::uint64_t> index_failures{0};
  /// Every read advances the manual clock by this much first.
  std::chrono::milliseconds read_delay{0};

  /// Reads block from now until release_reads().
  void hold_reads() { set_held(held_, true); }
  void release_reads() { set_held(held_, false); }
  /// Existence checks block from now until release_exists().
  void hold_exists() { set_held(exists_held_, true); }
  void release_exists() { set_held(exists_held_, false); }

  std::atomic<std::size_t> writes{0}, reads{0}, state_reads{0}, exists_calls{0};

  status set(l3_pool pool, std::string_view key, std::span<const std::byte> value) override {
    if (writes >= fail_writes_after) return {write_error, "injected write failure"};
    status s = inner_.set(pool, key, value);
    if (s) ++writes;
    return s;
  }
  status get(l3_pool pool, std::string_view key, std::vector<std::byte>& out) override {
    ++reads;
    if (pool == l3_pool::ssm_state) ++state_reads;
    wait_while_held(held_);
    if (read_delay.count() > 0) {
      if (time_ == nullptr)
        return {errc::invalid_argument, "faulty_store: read_delay needs a clock"};
      time_->advance(read_delay);
    }
    if (fail_reads.count(std::string(key))) {
      out.clear();
      return {errc::io_error, "injected read failure"};
    }
    return inner_.get(pool, key, out);
  }
  bool exists(l3_pool pool, std::string_view key) override {
    ++exists_calls;
    wait_while_held(exists_held_);
    return inner_.exists(pool, key);
  }
  status erase(l3_pool pool, std::string_view key) override { return inner_.erase(pool, key); }
  result<std::size_t> erase_prefix(std::string_view prefix) override {
    return inner_.erase_prefix(prefix);
  }
  l3_usage usage() const override {
    l3_usage u = inner_.usage();
    u.index_failures = index_failures;
    return u;
  }

 private:
  void set_held(bool& which, bool held) {
    {
      std::lock_guard lk(mu_);
      which = held;
    }
    cv_.notify_all();
  }
  /// Blocks while `which` is held.
  void wait_while_held(const bool& which) {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return !which; });
  }

  l3_store& inner_;
  manual_clock* time_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  bool exists_held_ = false;
};

}  // namespace hc::test
