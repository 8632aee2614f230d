#pragma once
// The node's metrics in Prometheus form (prometheus-cpp), served at /metrics. Only
// monitoring/ includes prometheus-cpp (architecture.md §6). Series (all documented in
// README "Metrics"):
//   hybridcache_match_requests_total{tier}                     counter
//   hybridcache_hit_tokens_total{tier,component="kv"|"ssm"}    counter (ssm = resumable)
//   hybridcache_queried_tokens_total                           counter (the matches' keys)
//   hybridcache_inserted_tokens_total                          counter
//   hybridcache_evicted_tokens_total{reason}, _evicted_slots_total{reason}
//       reason = pressure (inside an allocation) | explicit (an evict command)
//   hybridcache_tombstones_created_total{cause="eviction"|"split"} counter
//   hybridcache_forward_ops_total{op="snapshot"|"clear"|"cow"} counter
//   hybridcache_command_errors_total{command}                  counter
//   hybridcache_kv_pool_tokens{instance,state}, hybridcache_ssm_pool_slots{instance,state}
//       gauges; state = capacity | used | evictable | protected | pinned (part of
//       protected: the pins' pinned lengths summed, and the pins — each holds one state)
//   hybridcache_host_kv_pool_tokens{instance,state},
//   hybridcache_host_ssm_pool_slots{instance,state}
//       gauges of the L2 host pools (instances with a host tier); state = capacity | used
//   hybridcache_sessions                                       gauge
//   hybridcache_rpc_latency_seconds{method}                    histogram
//   hybridcache_forward_fence_wait_seconds                     histogram
//   hybridcache_prefetch_total{outcome}                        counter; outcome = completed |
//       truncated | partial | skipped_below_threshold | rate_limited | timed_out | revoked |
//       aborted
//   hybridcache_prefetch_seconds                               histogram (prefetch I/O)
//   hybridcache_backup_seconds{result="ok"|"failed"}           histogram (one node to L3)
//   hybridcache_tier_bytes_total{tier="l2"|"l3",direction="read"|"write"} counter
//   hybridcache_tier_bandwidth_bytes_per_second{tier,direction} gauge (last timed transfer)
//   (L2 / L3 hits: hybridcache_match_requests_total and _hit_tokens_total, tier="l2"|"l3")
//   hybridcache_build_info{version,protocol}                   gauge (1)
//   hybridcache_l3_values, hybridcache_l3_bytes{state="used"|"capacity"} gauges,
//   hybridcache_l3_evicted_values_total counter                (read at each scrape)
//   process_*: the process's CPU, memory, file descriptors, threads and start time
//       (monitoring/process_metrics.hpp)

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "actors/common/metrics_sink.hpp"
#include "actors/common/status.hpp"

namespace hc {

/// What the L3 store holds, for its gauges (prometheus_metrics::watch_l3).
struct l3_figures {
  std::uint64_t values = 0;    ///< values stored
  std::uint64_t bytes = 0;     ///< their bytes (headers included)
  std::uint64_t capacity = 0;  ///< bytes kept before the least recently used are evicted
  std::uint64_t evicted = 0;   ///< values evicted for room since start
};

class prometheus_metrics final : public metrics_sink {
 public:
  prometheus_metrics();
  ~prometheus_metrics() override;

  /// Serves /metrics on "host:port" (port 0 = any free port). Once.
  status serve(const std::string& address);
  /// Bound "host:port" after serve(), else "".
  std::string address() const;
  /// The text exposition of every series (what /metrics returns).
  std::string text() const;

  void l1_match(std::uint64_t kv_matched, std::uint64_t resumable) override;
  void queried_tokens(std::uint64_t n) override;
  void inserted_tokens(std::uint64_t n) override;
  void evicted(std::string_view reason, std::uint64_t tokens, std::uint64_t slots) override;
  void tombstones(std::string_view cause, std::uint64_t n) override;
  void instance_closed(std::uint64_t instance) override;
  void forward_ops(std::uint64_t snapshots, std::uint64_t clears, std::uint64_t cows) override;
  void command_error(std::string_view kind) override;
  void fence_wait(double seconds) override;
  void pools(std::uint64_t instance, const pool_gauges& g) override;
  void sessions(std::int64_t delta) override;
  void rpc(std::string_view method, double seconds) override;
  void l2_hit(std::uint64_t tokens) override;
  void prefetch(std::string_view outcome, std::uint64_t tokens, std::uint64_t resumable,
                double seconds) override;
  void tier_bytes(std::string_view tier, std::string_view direction, std::uint64_t bytes,
                  double seconds) override;
  void backup(double seconds, bool failed) override;
  void host_evicted(std::uint64_t tokens, std::uint64_t slots) override;
  void fault(std::string_view kind) override;
  /// hybridcache_l3_loading: 1 while the L3 store reads its index with the node serving
  /// (hybridcached's start, actors/daemon/l3_start.hpp), else 0.
  void l3_loading(bool loading);
  /// hybridcache_build_info{version,protocol} = 1: which release a node runs (a fleet in a
  /// rolling upgrade: `count by (version) (hybridcache_build_info)`). Once, at start.
  void build_info(std::string_view version, std::uint32_t protocol);
  /// hybridcache_l3_values, hybridcache_l3_bytes{state="used"|"capacity"} and
  /// hybridcache_l3_evicted_values_total, from `read` at each scrape — on the scraping
  /// thread, so `read` must be thread-safe (rocksdb_store::usage takes the store's lock).
  /// Until it is set (a node without an L3 store), none of them is exposed.
  void watch_l3(std::function<l3_figures()> read);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace hc
