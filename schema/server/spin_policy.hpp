#pragma once
// How long the RPC thread polls for a call's completion (rpc::submit_spinning) before it
// sleeps until the actor wakes it. Polling saves a sleep and a wake-up per call, but while
// the thread polls for one call it reads no other connection's: with several busy
// connections each one's calls would wait out the others' polls, and the actors would
// lose the calls that queue up meanwhile (8 Python workers on 2 vCPUs: steps per second
// +13–50 % and a third off their p99 without the poll, BENCHMARKS.md §4.16). So a call
// polls only while its connection is the only one calling.
//
// Thread safety: none; the RPC thread's (as every part of server_ctx).

#include <chrono>
#include <cstdint>

namespace hc::rpc {

class spin_policy {
 public:
  using clock = std::chrono::steady_clock;
  /// How long the callers must have been one connection before its calls poll.
  static constexpr std::chrono::milliseconds quiet{1};

  /// `budget`: the poll of a call while one connection calls (rpc_server_config::step_spin);
  /// zero or less never polls.
  explicit spin_policy(std::chrono::nanoseconds budget = {}) noexcept : budget_(budget) {}

  /// The poll budget of a call of connection `caller` (a number other than 0) made at
  /// `now`: the budget when no other connection called within `quiet` before it, else
  /// zero. Calls are reported in the order they are made.
  std::chrono::nanoseconds budget_for(std::uint64_t caller,
                                      clock::time_point now = clock::now()) noexcept;

 private:
  std::chrono::nanoseconds budget_;
  std::uint64_t last_caller_ = 0;
  clock::time_point callers_changed_at_{};
};

}  // namespace hc::rpc
