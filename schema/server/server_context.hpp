#pragma once
// What the RPC capabilities share: the node they submit jobs to, the metrics, the server's
// settings; submit() (a job's completion as a kj promise) and timed (an RPC's latency).
// Everything here runs on the RPC thread.

#include <kj/async.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "actors/common/metrics_sink.hpp"
#include "actors/node/node.hpp"

namespace hc::rpc {

using clk = std::chrono::steady_clock;

struct server_ctx {
  node& n;
  metrics_sink& metrics;
  std::string token;
  std::string version;
  std::size_t store_arena_bytes = 0;
  std::size_t max_store_keys = 0;
  std::uint64_t next_arena = 0;
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
