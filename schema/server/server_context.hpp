#pragma once
// What the RPC capabilities share: the node they submit jobs to, the metrics, the server's
// settings; submit() (a job's completion as a kj promise) and timed (an RPC's latency).
// Everything here runs on the RPC thread.

#include <kj/async.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "actors/common/clock.hpp"
#include "actors/common/fault_log.hpp"
#include "actors/common/metrics_sink.hpp"
#include "actors/node/node.hpp"
#include "schema/server/spin_policy.hpp"

namespace hc::rpc {

using clk = std::chrono::steady_clock;

struct server_ctx {
  server_ctx(node& node_, metrics_sink& metrics_)
      : n(node_), metrics(metrics_), faults(metrics_, steady()) {}
  node& n;
  metrics_sink& metrics;
  /// The RPC thread's faults (client_gone, rpc_*): counted and logged with their detail.
  fault_reporter faults;
  std::string token;
  std::string version;
  std::size_t store_arena_bytes = 0;
  std::size_t max_stores = 0;
  /// Store arenas alive (decremented by the last owner of each: an actor's job may be).
  std::shared_ptr<std::atomic<std::size_t>> open_arenas =
      std::make_shared<std::atomic<std::size_t>>(0);
  std::size_t max_store_keys = 0;
  std::uint64_t next_arena = 0;
  /// How long a step, a fence or a Store.exists polls for its completion (submit_spinning).
  spin_policy spin;
  /// Numbers the connections (their bootstrap node services), for spin_policy.
  std::uint64_t next_connection = 0;
};

/// Submits a job and returns a promise that resolves (on this kj thread) once an actor
/// completed it. A job destroyed uncompleted (node shutting down) rejects the promise.
template <class Job>
kj::Promise<void> submit(node& n, const std::shared_ptr<Job>& job) {
  auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
  auto f = std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<void>>>(kj::mv(paf.fulfiller));
  job->done = [f](Job&) { (*f)->fulfill(); };
  n.submit(job);
  return kj::mv(paf.promise);
}

/// submit(), but this thread first polls the job's completion for up to `spin` (a step's
/// work is tens of µs): a job done within it resolves without this thread going to sleep
/// and being woken again (one context switch fewer per call, the costliest part of a small
/// call on a VM), and the actor's side skips the cross-thread wake-up as well. Meanwhile
/// this thread serves nobody else, so the budget bounds what another connection may wait
/// (spin_policy gives none while several connections call). Between its polls it yields
/// its CPU, which the actor's thread may be waiting for (on 2 vCPUs a Store.exists's p99
/// was 208–387 µs without the yield, 184–220 µs with it: BENCHMARKS.md §4.16). After the
/// budget, as submit().
template <class Job>
kj::Promise<void> submit_spinning(node& n, const std::shared_ptr<Job>& job,
                                  std::chrono::nanoseconds spin) {
  if (spin.count() <= 0) return submit(n, job);
  enum : int { polling, done, sleeping };
  struct completion {
    std::atomic<int> state{polling};
    kj::Own<kj::CrossThreadPromiseFulfiller<void>> fulfiller;  ///< set before `sleeping`
  };
  auto c = std::make_shared<completion>();
  // The actor's thread: if this thread went to sleep, wake it; else it sees `done`.
  job->done = [c](Job&) {
    if (c->state.exchange(done) == sleeping) c->fulfiller->fulfill();
  };
  n.submit(job);
  const clk::time_point until = clk::now() + spin;
  do {
    for (int i = 0; i < 64; ++i)
      if (c->state.load(std::memory_order_acquire) == done) return kj::READY_NOW;
    ::sched_yield();
  } while (clk::now() < until);
  auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
  c->fulfiller = kj::mv(paf.fulfiller);
  int expected = polling;
  if (c->state.compare_exchange_strong(expected, sleeping)) return kj::mv(paf.promise);
  c->fulfiller->fulfill();  // done meanwhile: nobody else touches the fulfiller
  return kj::mv(paf.promise);
}

class timed {
 public:
  timed(metrics_sink& m, const char* method) : m_(m), method_(method), t0_(clk::now()) {}
  void done() const { m_.rpc(method_, std::chrono::duration<double>(clk::now() - t0_).count()); }

 private:
  metrics_sink& m_;
  const char* method_;
  clk::time_point t0_;
};

}  // namespace hc::rpc
