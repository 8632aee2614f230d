#include "monitoring/prometheus_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <sstream>
#include <string>
#include <vector>

#include "actors/common/command.hpp"
#include "actors/common/invariant.hpp"

namespace hc {

namespace pm = prometheus;

namespace {

/// hybridcache_invariant_violations_total, read from the process-wide count at each scrape.
class invariant_count final : public pm::Collectable {
 public:
  std::vector<pm::MetricFamily> Collect() const override {
    pm::MetricFamily f;
    f.name = "hybridcache_invariant_violations_total";
    f.help = "Internal invariants found broken (a bug in hybridcache; see inspect)";
    f.type = pm::MetricType::Counter;
    pm::ClientMetric m;
    m.counter.value = static_cast<double>(invariant_violations());
    f.metric.push_back(m);
    return {f};
  }
};

}  // namespace

struct prometheus_metrics::impl {
  std::shared_ptr<pm::Registry> reg = std::make_shared<pm::Registry>();
  std::shared_ptr<invariant_count> invariants = std::make_shared<invariant_count>();
  std::unique_ptr<pm::Exposer> exposer;
  std::string bound;

  pm::Family<pm::Counter>& match_requests = pm::BuildCounter()
                                                .Name("hybridcache_match_requests_total")
                                                .Help("Prefix match requests, by tier")
                                                .Register(*reg);
  pm::Family<pm::Counter>& hit_tokens =
      pm::BuildCounter()
          .Name("hybridcache_hit_tokens_total")
          .Help("Matched tokens by tier and component (kv: KV walk; ssm: resumable, with a state)")
          .Register(*reg);
  pm::Family<pm::Counter>& inserted = pm::BuildCounter()
                                          .Name("hybridcache_inserted_tokens_total")
                                          .Help("Tokens offered to the tree by cache_*_req")
                                          .Register(*reg);
  pm::Family<pm::Counter>& evicted_tokens = pm::BuildCounter()
                                                .Name("hybridcache_evicted_tokens_total")
                                                .Help("KV tokens evicted, by reason")
                                                .Register(*reg);
  pm::Family<pm::Counter>& evicted_slots = pm::BuildCounter()
                                               .Name("hybridcache_evicted_slots_total")
                                               .Help("SSM slots evicted, by reason")
                                               .Register(*reg);
  pm::Family<pm::Counter>& tombstones = pm::BuildCounter()
                                            .Name("hybridcache_tombstones_created_total")
                                            .Help("Tree nodes left without an SSM state, by cause")
                                            .Register(*reg);
  pm::Family<pm::Counter>& ops = pm::BuildCounter()
                                     .Name("hybridcache_forward_ops_total")
                                     .Help("Data ops queued on the forward stream")
                                     .Register(*reg);
  pm::Family<pm::Counter>& errors = pm::BuildCounter()
                                        .Name("hybridcache_command_errors_total")
                                        .Help("Commands that returned an error")
                                        .Register(*reg);
  pm::Family<pm::Gauge>& kv_pool = pm::BuildGauge()
                                       .Name("hybridcache_kv_pool_tokens")
                                       .Help("L1 KV pool tokens by state")
                                       .Register(*reg);
  pm::Family<pm::Gauge>& ssm_pool = pm::BuildGauge()
                                        .Name("hybridcache_ssm_pool_slots")
                                        .Help("L1 SSM pool slots by state")
                                        .Register(*reg);
  pm::Gauge& sessions = pm::BuildGauge()
                            .Name("hybridcache_sessions")
                            .Help("Open worker sessions")
                            .Register(*reg)
                            .Add({});
  pm::Family<pm::Histogram>& rpc = pm::BuildHistogram()
                                       .Name("hybridcache_rpc_latency_seconds")
                                       .Help("Server-side RPC latency by method")
                                       .Register(*reg);
  pm::Histogram& fence =
      pm::BuildHistogram()
          .Name("hybridcache_forward_fence_wait_seconds")
          .Help("Time begin_forward waited for queued ops and the previous forward")
          .Register(*reg)
          .Add({}, buckets());

  pm::Family<pm::Counter>& prefetches = pm::BuildCounter()
                                            .Name("hybridcache_prefetch_total")
                                            .Help("Storage prefetches by outcome")
                                            .Register(*reg);
  pm::Histogram& prefetch_seconds = pm::BuildHistogram()
                                        .Name("hybridcache_prefetch_seconds")
                                        .Help("Storage prefetch I/O time (existence and reads)")
                                        .Register(*reg)
                                        .Add({}, io_buckets());
  pm::Family<pm::Histogram>& backup_seconds = pm::BuildHistogram()
                                                  .Name("hybridcache_backup_seconds")
                                                  .Help("Time to back one node up to L3")
                                                  .Register(*reg);
  pm::Family<pm::Counter>& tier_bytes = pm::BuildCounter()
                                            .Name("hybridcache_tier_bytes_total")
                                            .Help("Bytes moved by the L2 and L3 tiers")
                                            .Register(*reg);
  pm::Family<pm::Gauge>& tier_bandwidth =
      pm::BuildGauge()
          .Name("hybridcache_tier_bandwidth_bytes_per_second")
          .Help("Bytes per second of the last timed transfer of each tier and direction")
          .Register(*reg);
  pm::Gauge& l3_loading = pm::BuildGauge()
                              .Name("hybridcache_l3_loading")
                              .Help(
                                  "1 while the L3 store reads its index with the node "
                                  "serving (the L3 tier misses meanwhile), else 0")
                              .Register(*reg)
                              .Add({});
  pm::Family<pm::Counter>& faults =
      pm::BuildCounter()
          .Name("hybridcache_faults_total")
          .Help("Faults the node survived, by kind (metrics_sink::fault; README, Reliability)")
          .Register(*reg);
  static constexpr const char* fault_kinds[] = {
      "l3_write_error",   "l3_full",          "l3_read_error",    "l3_corrupt_value",
      "l3_timeout",       "client_gone",      "shm_removed",      "l3_corrupt_store",
      "rpc_accept_error", "rpc_backpressure", "rpc_login_refused"};
  /// The RPCs the server times (schema/server: `timed` and ping).
  static constexpr const char* rpc_methods[] = {
      "ping",        "open",         "step",        "close",     "begin_forward",
      "end_forward", "store_exists", "store_clear", "store_get", "store_set"};
  static pm::Histogram::BucketBoundaries io_buckets() {
    return {1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2, 0.1, 0.5, 1.0, 5.0, 30.0};
  }
  static pm::Histogram::BucketBoundaries buckets() {
    return {5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 5e-3, 2.5e-2, 0.1, 1.0};
  }

  impl() {
    // Every tier and component exists from the start (L2/L3 arrive with the tiers issue).
    for (const char* tier : {"l1", "l2", "l3"}) {
      match_requests.Add({{"tier", tier}});
      for (const char* comp : {"kv", "ssm"})
        hit_tokens.Add({{"tier", tier}, {"component", comp}});
    }
    for (const char* reason : {"pressure", "explicit"}) {
      evicted_tokens.Add({{"reason", reason}});
      evicted_slots.Add({{"reason", reason}});
    }
    for (const char* cause : {"eviction", "split"})
      tombstones.Add({{"cause", cause}});
    for (const char* op : {"snapshot", "clear", "cow"})
      ops.Add({{"op", op}});
    inserted.Add({});
    for (const char* o : {"completed", "truncated", "partial", "skipped_below_threshold",
                          "rate_limited", "timed_out", "revoked", "aborted"})
      prefetches.Add({{"outcome", o}});
    for (const char* r : {"ok", "failed"})
      backup_seconds.Add({{"result", r}}, io_buckets());
    for (const char* k : fault_kinds)
      faults.Add({{"kind", k}});
    for (const char* tier : {"l2", "l3"})
      for (const char* dir : {"read", "write"}) {
        tier_bytes.Add({{"tier", tier}, {"direction", dir}});
        tier_bandwidth.Add({{"tier", tier}, {"direction", dir}});
      }
    // Every command kind and every timed RPC from the start too: rate() over a series
    // that does not exist yet is no data, not 0 (dashboards and alert ratios need 0).
    for (std::size_t k = 0; k < cmd_kind_count; ++k)
      errors.Add({{"command", to_string(static_cast<cmd_kind>(k))}});
    for (const char* m : rpc_methods)
      rpc.Add({{"method", m}}, buckets());
  }
};

prometheus_metrics::prometheus_metrics() : impl_(std::make_unique<impl>()) {}
prometheus_metrics::~prometheus_metrics() = default;

status prometheus_metrics::serve(const std::string& address) {
  if (impl_->exposer) return {errc::invalid_argument, "metrics already served"};
  try {
    // civetweb serves a connection on one of its worker threads until the request has been
    // read, by default for up to 30 s: two idle connections (a port scanner, a health check
    // that only connects, a stuck client) held both default workers and every scrape
    // failed for 30 s. Four workers, and a connection that has not sent its request (or
    // taken the reply) within 3 s is dropped.
    impl_->exposer = std::make_unique<pm::Exposer>(std::vector<std::string>{
        "listening_ports", address, "num_threads", "4", "request_timeout_ms", "3000"});
    impl_->exposer->RegisterCollectable(impl_->reg);
    impl_->exposer->RegisterCollectable(impl_->invariants);
    auto ports = impl_->exposer->GetListeningPorts();
    const std::string host = address.substr(0, address.rfind(':'));
    impl_->bound = host + ":" + (ports.empty() ? std::string("?") : std::to_string(ports.front()));
  } catch (const std::exception& e) {
    impl_->exposer.reset();
    return {errc::io_error, "cannot serve metrics on " + address + ": " + e.what()};
  }
  return {};
}

std::string prometheus_metrics::address() const {
  return impl_->bound;
}

std::string prometheus_metrics::text() const {
  std::vector<pm::MetricFamily> families = impl_->reg->Collect();
  for (pm::MetricFamily& f : impl_->invariants->Collect())
    families.push_back(std::move(f));
  return pm::TextSerializer().Serialize(families);
}

void prometheus_metrics::l1_match(std::uint64_t kv_matched, std::uint64_t resumable) {
  impl_->match_requests.Add({{"tier", "l1"}}).Increment();
  impl_->hit_tokens.Add({{"tier", "l1"}, {"component", "kv"}})
      .Increment(static_cast<double>(kv_matched));
  impl_->hit_tokens.Add({{"tier", "l1"}, {"component", "ssm"}})
      .Increment(static_cast<double>(resumable));
}

void prometheus_metrics::inserted_tokens(std::uint64_t n) {
  impl_->inserted.Add({}).Increment(static_cast<double>(n));
}

void prometheus_metrics::evicted(std::string_view reason, std::uint64_t tokens,
                                 std::uint64_t slots) {
  const std::string r(reason);
  impl_->evicted_tokens.Add({{"reason", r}}).Increment(static_cast<double>(tokens));
  impl_->evicted_slots.Add({{"reason", r}}).Increment(static_cast<double>(slots));
}

void prometheus_metrics::tombstones(std::string_view cause, std::uint64_t n) {
  impl_->tombstones.Add({{"cause", std::string(cause)}}).Increment(static_cast<double>(n));
}

void prometheus_metrics::forward_ops(std::uint64_t snapshots, std::uint64_t clears,
                                     std::uint64_t cows) {
  impl_->ops.Add({{"op", "snapshot"}}).Increment(static_cast<double>(snapshots));
  impl_->ops.Add({{"op", "clear"}}).Increment(static_cast<double>(clears));
  impl_->ops.Add({{"op", "cow"}}).Increment(static_cast<double>(cows));
}

void prometheus_metrics::command_error(std::string_view kind) {
  impl_->errors.Add({{"command", std::string(kind)}}).Increment();
}

void prometheus_metrics::fence_wait(double seconds) {
  impl_->fence.Observe(seconds);
}

void prometheus_metrics::pools(std::uint64_t instance, const pool_gauges& g) {
  const std::string id = std::to_string(instance);
  auto set = [&](pm::Family<pm::Gauge>& f, const char* state, std::uint64_t v) {
    f.Add({{"instance", id}, {"state", state}}).Set(static_cast<double>(v));
  };
  set(impl_->kv_pool, "capacity", g.kv_capacity);
  set(impl_->kv_pool, "used", g.kv_used);
  set(impl_->kv_pool, "evictable", g.kv_evictable);
  set(impl_->kv_pool, "protected", g.kv_protected);
  set(impl_->ssm_pool, "capacity", g.slot_capacity);
  set(impl_->ssm_pool, "used", g.slot_used);
  set(impl_->ssm_pool, "evictable", g.slot_evictable);
  set(impl_->ssm_pool, "protected", g.slot_protected);
}

void prometheus_metrics::instance_closed(std::uint64_t instance) {
  const std::string id = std::to_string(instance);
  for (pm::Family<pm::Gauge>* f : {&impl_->kv_pool, &impl_->ssm_pool})
    for (const char* state : {"capacity", "used", "evictable", "protected"})
      f->Remove(&f->Add({{"instance", id}, {"state", state}}));
}

void prometheus_metrics::sessions(std::int64_t delta) {
  impl_->sessions.Increment(static_cast<double>(delta));
}

void prometheus_metrics::rpc(std::string_view method, double seconds) {
  impl_->rpc.Add({{"method", std::string(method)}}, impl::buckets()).Observe(seconds);
}

void prometheus_metrics::l2_hit(std::uint64_t tokens) {
  const auto n = static_cast<double>(tokens);
  impl_->match_requests.Add({{"tier", "l2"}}).Increment();
  impl_->hit_tokens.Add({{"tier", "l2"}, {"component", "kv"}}).Increment(n);
  impl_->hit_tokens.Add({{"tier", "l2"}, {"component", "ssm"}}).Increment(n);
}

void prometheus_metrics::prefetch(std::string_view outcome, std::uint64_t tokens,
                                  std::uint64_t resumable, double seconds) {
  impl_->prefetches.Add({{"outcome", std::string(outcome)}}).Increment();
  if (seconds > 0) impl_->prefetch_seconds.Observe(seconds);
  if (tokens == 0) return;
  impl_->match_requests.Add({{"tier", "l3"}}).Increment();
  impl_->hit_tokens.Add({{"tier", "l3"}, {"component", "kv"}})
      .Increment(static_cast<double>(tokens));
  impl_->hit_tokens.Add({{"tier", "l3"}, {"component", "ssm"}})
      .Increment(static_cast<double>(resumable));
}

void prometheus_metrics::tier_bytes(std::string_view tier, std::string_view direction,
                                    std::uint64_t bytes, double seconds) {
  const pm::Labels labels{{"tier", std::string(tier)}, {"direction", std::string(direction)}};
  impl_->tier_bytes.Add(labels).Increment(static_cast<double>(bytes));
  if (seconds > 0 && bytes > 0)
    impl_->tier_bandwidth.Add(labels).Set(static_cast<double>(bytes) / seconds);
}

void prometheus_metrics::backup(double seconds, bool failed) {
  impl_->backup_seconds.Add({{"result", failed ? "failed" : "ok"}}, impl::io_buckets())
      .Observe(seconds);
}

void prometheus_metrics::fault(std::string_view kind) {
  impl_->faults.Add({{"kind", std::string(kind)}}).Increment();
}

void prometheus_metrics::l3_loading(bool loading) {
  impl_->l3_loading.Set(loading ? 1 : 0);
}

}  // namespace hc
