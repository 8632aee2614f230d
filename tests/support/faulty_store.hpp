#pragma once
// Fault injection for L3 tests: wraps a real store and fails writes, fails or slows reads,
// or corrupts values behind the store's back, on the keys or after the counts configured.
#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "storage/l3_store.hpp"

namespace hc::test {

class faulty_store final : public l3_store {
 public:
  explicit faulty_store(l3_store& inner) : inner_(inner) {}

  /// Writes fail (io_error) once `n` more writes have succeeded; SIZE_MAX = never.
  std::size_t fail_writes_after = SIZE_MAX;
  /// Reads of these keys fail with io_error.
  std::set<std::string> fail_reads;
  /// Every read sleeps this long first.
  std::chrono::milliseconds read_delay{0};

  std::atomic<std::size_t> writes{0}, reads{0}, state_reads{0};

  status set(l3_pool pool, std::string_view key, std::span<const std::byte> value) override {
    if (writes >= fail_writes_after) return {errc::io_error, "injected write failure"};
    status s = inner_.set(pool, key, value);
    if (s) ++writes;
    return s;
  }
  status get(l3_pool pool, std::string_view key, std::vector<std::byte>& out) override {
    ++reads;
    if (pool == l3_pool::ssm_state) ++state_reads;
    if (read_delay.count() > 0) std::this_thread::sleep_for(read_delay);
    if (fail_reads.count(std::string(key))) {
      out.clear();
      return {errc::io_error, "injected read failure"};
    }
    return inner_.get(pool, key, out);
  }
  bool exists(l3_pool pool, std::string_view key) override { return inner_.exists(pool, key); }
  status erase(l3_pool pool, std::string_view key) override { return inner_.erase(pool, key); }
  l3_usage usage() const override { return inner_.usage(); }

 private:
  l3_store& inner_;
};

}  // namespace hc::test
