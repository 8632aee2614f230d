#pragma once
// An L3 store that serves while the store behind it opens. Opening the RocksDB store reads
// its whole index (seconds for millions of values, BENCHMARKS.md §13); a node that waited
// for it would refuse its workers — and fail a supervisor's startup probe — for that long.
// With this in front, the node serves at once and its L3 tier joins when the index is read:
//  * until then the tier misses: get / get_into are not_found, exists is false, nothing is
//    read; set is refused (io_error naming the load) — callers that back up pages look at
//    usage().loading and skip instead of counting a failure; usage() shows the capacity
//    given, nothing stored, loading = true;
//  * erase is remembered and applied to the store before it serves anything, so an erased
//    value never comes back; erase_prefix fails (io_error, "try again"): how many values
//    it removes is not known before the index is;
//  * once the opener returned a store, every call goes to it;
//  * if the opener failed, every call fails with its error (gets: not_found, exists:
//    false) and usage() shows nothing stored, loading = false.
//
// Thread safety: safe for concurrent use. The opener runs on a thread of its own; the
// destructor sets the flag the opener was given (it should give up soon) and waits for it.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "storage/l3_store.hpp"

namespace hc {

class loading_store final : public l3_store {
 public:
  /// Opens the store behind; `stop` is set when the loading_store is destroyed first.
  using opener = std::function<result<std::shared_ptr<l3_store>>(const std::atomic<bool>& stop)>;

  /// Starts `open` on a thread of its own. `capacity` is what usage() reports meanwhile.
  loading_store(std::uint64_t capacity, opener open);
  ~loading_store() override;
  loading_store(const loading_store&) = delete;
  loading_store& operator=(const loading_store&) = delete;

  status set(l3_pool pool, std::string_view key, std::span<const std::byte> value) override;
  status get(l3_pool pool, std::string_view key, std::vector<std::byte>& out) override;
  status get_into(l3_pool pool, std::string_view key, std::span<std::byte> dst) override;
  bool exists(l3_pool pool, std::string_view key) override;
  status erase(l3_pool pool, std::string_view key) override;
  result<std::size_t> erase_prefix(std::string_view prefix) override;
  l3_usage usage() const override;

  /// True until the opener returned.
  bool loading() const noexcept { return state_.load(std::memory_order_acquire) == loading_; }
  /// Waits until the opener returned: ok if the store serves, the opener's error if not.
  status wait() const;

 private:
  enum state : int { loading_, serving_, failed_ };
  /// The store behind once it serves, else null.
  l3_store* target() const noexcept {
    return state_.load(std::memory_order_acquire) == serving_ ? store_.get() : nullptr;
  }
  /// Publishes what the opener returned (on the opener's thread).
  void finish(result<std::shared_ptr<l3_store>> opened);
  /// The error of a call that cannot go to the store: still loading, or the load failed.
  error not_serving(std::string_view what) const;

  const std::uint64_t capacity_;
  std::atomic<bool> stop_{false};
  std::atomic<int> state_{loading_};
  std::shared_ptr<l3_store> store_;  ///< set once, before state_ becomes serving_
  error failure_;                    ///< set once, before state_ becomes failed_
  mutable std::mutex mu_;            ///< pending_erase_, and the change of state_
  mutable std::condition_variable done_;
  std::vector<std::pair<l3_pool, std::string>> pending_erase_;
  std::thread thread_;  ///< last: started once the members it uses exist
};

}  // namespace hc
