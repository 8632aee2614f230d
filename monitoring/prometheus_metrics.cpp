#include "monitoring/prometheus_metrics.hpp"
#include "monitoring/metrics_address.hpp"
#include "monitoring/process_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <array>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
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

/// The L3 store's gauges, read from the store at each scrape (prometheus_metrics::watch_l3).
class l3_collector final : public pm::Collectable {
 public:
  void watch(std::function<l3_figures()> read) {
    std::lock_guard lk(mu_);
    read_ = std::move(read);
  }
  std::vector<pm::MetricFamily> Collect() const override {
    std::function<l3_figures()> read;
    {
      std::lock_guard lk(mu_);
      read = read_;
    }
    if (!read) return {};
    const l3_figures f = read();
    const auto one = [](const char* name, const char* help, pm::MetricType type) {
      pm::MetricFamily family;
      family.name = name;
      family.help = help;
      family.type = type;
      return family;
    };
    const auto gauge = [](double v, std::vector<pm::ClientMetric::Label> labels = {}) {
      pm::ClientMetric m;
      m.label = std::move(labels);
      m.gauge.value = v;
      return m;
    };
    pm::MetricFamily values =
        one("hybridcache_l3_values", "Values the L3 store holds", pm::MetricType::Gauge);
    values.metric.push_back(gauge(static_cast<double>(f.values)));
    pm::MetricFamily bytes =
        one("hybridcache_l3_bytes",
            "L3 store bytes: used (its values, headers included) and capacity (--l3-capacity)",
            pm::MetricType::Gauge);
    bytes.metric.push_back(gauge(static_cast<double>(f.bytes), {{"state", "used"}}));
    bytes.metric.push_back(gauge(static_cast<double>(f.capacity), {{"state", "capacity"}}));
    pm::MetricFamily evicted = one("hybridcache_l3_evicted_values_total",
                                   "Values the L3 store evicted to make room (capacity, index "
                                   "memory or free disk space)",
                                   pm::MetricType::Counter);
    pm::ClientMetric e;
    e.counter.value = static_cast<double>(f.evicted);
    evicted.metric.push_back(e);
    return {values, bytes, evicted};
  }

 private:
  mutable std::mutex mu_;
  std::function<l3_figures()> read_;
};

/// The series of one family under one label, resolved once by value: Family::Add builds a
/// label map, hashes it and takes the family's lock on every call (~0.4 µs for a match's
/// three counters, ~1.1 µs for an instance's eight pool gauges), which the hot paths —
/// every step, every match — do not pay. A value not resolved beforehand is added then.
template <class T>
class series_by {
 public:
  series_by(pm::Family<T>& family, std::string label) : family_(family), label_(std::move(label)) {}
  /// Adds (or finds) the series `value` and keeps it; for the constructor.
  template <class... Args>
  T& resolve(std::string_view value, Args&&... args) {
    T& t = family_.Add({{label_, std::string(value)}}, std::forward<Args>(args)...);
    known_.emplace_back(std::string(value), &t);
    return t;
  }
  /// The series `value`: a resolved one without a lookup in the family.
  template <class... Args>
  T& operator()(std::string_view value, Args&&... args) {
    for (const auto& [name, t] : known_)
      if (name == value) return *t;
    return family_.Add({{label_, std::string(value)}}, std::forward<Args>(args)...);
  }

 private:
  pm::Family<T>& family_;
  std::string label_;
  std::vector<std::pair<std::string, T*>> known_;  ///< read-only once constructed
};

/// A tier's match series: requests, and matched tokens by component.
struct tier_series {
  pm::Counter* requests = nullptr;
  pm::Counter* kv = nullptr;
  pm::Counter* ssm = nullptr;
};

constexpr const char* pool_states[] = {"capacity", "used", "evictable", "protected", "pinned"};

/// Two pools' gauges per instance — KV tokens and SSM slots, each in the first `States` of
/// pool_states — made on an instance's first report and removed with it. The caller holds
/// its own lock around every call (the families' Add and Remove take theirs).
template <std::size_t States>
class instance_pools {
 public:
  instance_pools(pm::Family<pm::Gauge>& kv, pm::Family<pm::Gauge>& slots)
      : families_{&kv, &slots} {}

  /// Sets `instance`'s gauges: KV tokens' states, then SSM slots'.
  void set(std::uint64_t instance, const std::array<std::uint64_t, 2 * States>& values) {
    auto [it, made] = of_.try_emplace(instance);
    if (made) {
      const std::string id = std::to_string(instance);
      for (std::size_t f = 0; f < 2; ++f)
        for (std::size_t i = 0; i < States; ++i)
          it->second[f * States + i] =
              &families_[f]->Add({{"instance", id}, {"state", pool_states[i]}});
    }
    for (std::size_t i = 0; i < values.size(); ++i)
      it->second[i]->Set(static_cast<double>(values[i]));
  }
  /// Removes `instance`'s gauges, if it has any.
  void remove(std::uint64_t instance) {
    if (of_.erase(instance) == 0) return;
    const std::string id = std::to_string(instance);
    for (pm::Family<pm::Gauge>* f : families_)
      for (std::size_t i = 0; i < States; ++i)
        f->Remove(&f->Add({{"instance", id}, {"state", pool_states[i]}}));
  }

 private:
  std::array<pm::Family<pm::Gauge>*, 2> families_;
  std::unordered_map<std::uint64_t, std::array<pm::Gauge*, 2 * States>> of_;
};

}  // namespace

struct prometheus_metrics::impl {
  std::shared_ptr<pm::Registry> reg = std::make_shared<pm::Registry>();
  std::shared_ptr<invariant_count> invariants = std::make_shared<invariant_count>();
  std::shared_ptr<process_metrics> process = std::make_shared<process_metrics>();
  std::shared_ptr<l3_collector> l3_store = std::make_shared<l3_collector>();
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
  pm::Family<pm::Counter>& queried =
      pm::BuildCounter()
          .Name("hybridcache_queried_tokens_total")
          .Help(
              "Tokens prefix matches looked up (each match's key: its prompt but the last "
              "token), the denominator of the token hit rate: hit_tokens{component=\"kv\"} "
              "of l1 + l2 over this")
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
  pm::Family<pm::Gauge>& host_kv_pool = pm::BuildGauge()
                                            .Name("hybridcache_host_kv_pool_tokens")
                                            .Help("L2 host KV pool tokens: capacity and used")
                                            .Register(*reg);
  pm::Family<pm::Gauge>& host_ssm_pool = pm::BuildGauge()
                                             .Name("hybridcache_host_ssm_pool_slots")
                                             .Help("L2 host SSM pool slots: capacity and used")
                                             .Register(*reg);
  pm::Counter& host_evicted_tokens =
      pm::BuildCounter()
          .Name("hybridcache_host_evicted_tokens_total")
          .Help("L2 host KV tokens evicted (host pool pressure, or deleted with their node)")
          .Register(*reg)
          .Add({});
  pm::Counter& host_evicted_slots =
      pm::BuildCounter()
          .Name("hybridcache_host_evicted_slots_total")
          .Help(
              "L2 host SSM slots evicted: each one a checkpoint the host tier can no longer "
              "resume from")
          .Register(*reg)
          .Add({});
  pm::Family<pm::Gauge>& build = pm::BuildGauge()
                                     .Name("hybridcache_build_info")
                                     .Help("1, labelled with the node's release and protocol")
                                     .Register(*reg);
  pm::Family<pm::Counter>& faults =
      pm::BuildCounter()
          .Name("hybridcache_faults_total")
          .Help("Faults the node survived, by kind (metrics_sink::fault; README, Reliability)")
          .Register(*reg);
  static constexpr const char* fault_kinds[] = {
      "l3_write_error",   "l3_full",          "l3_read_error",     "l3_corrupt_value",
      "l3_timeout",       "client_gone",      "shm_removed",       "l3_corrupt_store",
      "rpc_accept_error", "rpc_backpressure", "rpc_login_refused", "l3_index_write_error"};
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

  // Series resolved once (series_by): every label value the node uses exists from the
  // start, also because rate() over a series that does not exist yet is no data, not 0
  // (dashboards and alert ratios need 0).
  tier_series l1, l2, l3;
  pm::Counter& inserted_total = inserted.Add({});
  pm::Counter& queried_total = queried.Add({});
  series_by<pm::Counter> evicted_tokens_by{evicted_tokens, "reason"};
  series_by<pm::Counter> evicted_slots_by{evicted_slots, "reason"};
  series_by<pm::Counter> tombstones_by{tombstones, "cause"};
  pm::Counter& snapshot_ops = ops.Add({{"op", "snapshot"}});
  pm::Counter& clear_ops = ops.Add({{"op", "clear"}});
  pm::Counter& cow_ops = ops.Add({{"op", "cow"}});
  series_by<pm::Counter> errors_by{errors, "command"};
  series_by<pm::Histogram> rpc_by{rpc, "method"};
  series_by<pm::Counter> prefetches_by{prefetches, "outcome"};
  pm::Histogram& backup_ok = backup_seconds.Add({{"result", "ok"}}, io_buckets());
  pm::Histogram& backup_failed = backup_seconds.Add({{"result", "failed"}}, io_buckets());
  series_by<pm::Counter> faults_by{faults, "kind"};
  /// Per instance, made at its first pools() and removed when it closes.
  std::mutex pool_mu;
  /// capacity / used / evictable / protected / pinned
  instance_pools<5> l1_pools{kv_pool, ssm_pool};
  instance_pools<2> l2_pools{host_kv_pool, host_ssm_pool};  ///< capacity / used

  tier_series resolve_tier(const char* tier) {
    return {&match_requests.Add({{"tier", tier}}),
            &hit_tokens.Add({{"tier", tier}, {"component", "kv"}}),
            &hit_tokens.Add({{"tier", tier}, {"component", "ssm"}})};
  }

  impl() : l1(resolve_tier("l1")), l2(resolve_tier("l2")), l3(resolve_tier("l3")) {
    for (const char* reason : {"pressure", "explicit"}) {
      evicted_tokens_by.resolve(reason);
      evicted_slots_by.resolve(reason);
    }
    for (const char* cause : {"eviction", "split"})
      tombstones_by.resolve(cause);
    for (const char* o : {"completed", "truncated", "partial", "skipped_below_threshold",
                          "rate_limited", "timed_out", "revoked", "aborted"})
      prefetches_by.resolve(o);
    for (const char* k : fault_kinds)
      faults_by.resolve(k);
    for (const char* tier : {"l2", "l3"})
      for (const char* dir : {"read", "write"}) {
        tier_bytes.Add({{"tier", tier}, {"direction", dir}});
        tier_bandwidth.Add({{"tier", tier}, {"direction", dir}});
      }
    for (std::size_t k = 0; k < cmd_kind_count; ++k)
      errors_by.resolve(to_string(static_cast<cmd_kind>(k)));
    for (const char* m : rpc_methods)
      rpc_by.resolve(m, buckets());
  }
};

prometheus_metrics::prometheus_metrics() : impl_(std::make_unique<impl>()) {}
prometheus_metrics::~prometheus_metrics() = default;

status prometheus_metrics::serve(const std::string& address) {
  if (impl_->exposer) return {errc::invalid_argument, "metrics already served"};
  if (status s = check_metrics_address(address); !s) return s;
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
    impl_->exposer->RegisterCollectable(impl_->process);
    impl_->exposer->RegisterCollectable(impl_->l3_store);
    auto ports = impl_->exposer->GetListeningPorts();
    const std::string host = address.substr(0, address.rfind(':'));
    impl_->bound = host + ":" + (ports.empty() ? std::string("?") : std::to_string(ports.front()));
  } catch (const std::exception& e) {
    impl_->exposer.reset();
    const std::string why = why_metrics_address_failed(address);
    return {errc::io_error,
            "cannot serve metrics on " + address + ": " + (why.empty() ? e.what() : why)};
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
  for (pm::MetricFamily& f : impl_->process->Collect())
    families.push_back(std::move(f));
  for (pm::MetricFamily& f : impl_->l3_store->Collect())
    families.push_back(std::move(f));
  return pm::TextSerializer().Serialize(families);
}

void prometheus_metrics::l1_match(std::uint64_t kv_matched, std::uint64_t resumable) {
  impl_->l1.requests->Increment();
  impl_->l1.kv->Increment(static_cast<double>(kv_matched));
  impl_->l1.ssm->Increment(static_cast<double>(resumable));
}

void prometheus_metrics::queried_tokens(std::uint64_t n) {
  impl_->queried_total.Increment(static_cast<double>(n));
}

void prometheus_metrics::inserted_tokens(std::uint64_t n) {
  impl_->inserted_total.Increment(static_cast<double>(n));
}

void prometheus_metrics::evicted(std::string_view reason, std::uint64_t tokens,
                                 std::uint64_t slots) {
  impl_->evicted_tokens_by(reason).Increment(static_cast<double>(tokens));
  impl_->evicted_slots_by(reason).Increment(static_cast<double>(slots));
}

void prometheus_metrics::tombstones(std::string_view cause, std::uint64_t n) {
  impl_->tombstones_by(cause).Increment(static_cast<double>(n));
}

void prometheus_metrics::forward_ops(std::uint64_t snapshots, std::uint64_t clears,
                                     std::uint64_t cows) {
  impl_->snapshot_ops.Increment(static_cast<double>(snapshots));
  impl_->clear_ops.Increment(static_cast<double>(clears));
  impl_->cow_ops.Increment(static_cast<double>(cows));
}

void prometheus_metrics::command_error(std::string_view kind) {
  impl_->errors_by(kind).Increment();
}

void prometheus_metrics::fence_wait(double seconds) {
  impl_->fence.Observe(seconds);
}

void prometheus_metrics::pools(std::uint64_t instance, const pool_gauges& g) {
  std::lock_guard lk(impl_->pool_mu);
  impl_->l1_pools.set(instance,
                      {g.kv_capacity, g.kv_used, g.kv_evictable, g.kv_protected, g.kv_pinned,
                       g.slot_capacity, g.slot_used, g.slot_evictable, g.slot_protected, g.pins});
  if (g.host)
    impl_->l2_pools.set(
        instance, {g.host_kv_capacity, g.host_kv_used, g.host_slot_capacity, g.host_slot_used});
}

void prometheus_metrics::instance_closed(std::uint64_t instance) {
  std::lock_guard lk(impl_->pool_mu);
  impl_->l1_pools.remove(instance);
  impl_->l2_pools.remove(instance);
}

void prometheus_metrics::sessions(std::int64_t delta) {
  impl_->sessions.Increment(static_cast<double>(delta));
}

void prometheus_metrics::rpc(std::string_view method, double seconds) {
  impl_->rpc_by(method, impl::buckets()).Observe(seconds);
}

void prometheus_metrics::l2_hit(std::uint64_t tokens) {
  const auto n = static_cast<double>(tokens);
  impl_->l2.requests->Increment();
  impl_->l2.kv->Increment(n);
  impl_->l2.ssm->Increment(n);
}

void prometheus_metrics::prefetch(std::string_view outcome, std::uint64_t tokens,
                                  std::uint64_t resumable, double seconds) {
  impl_->prefetches_by(outcome).Increment();
  if (seconds > 0) impl_->prefetch_seconds.Observe(seconds);
  if (tokens == 0) return;
  impl_->l3.requests->Increment();
  impl_->l3.kv->Increment(static_cast<double>(tokens));
  impl_->l3.ssm->Increment(static_cast<double>(resumable));
}

void prometheus_metrics::tier_bytes(std::string_view tier, std::string_view direction,
                                    std::uint64_t bytes, double seconds) {
  const pm::Labels labels{{"tier", std::string(tier)}, {"direction", std::string(direction)}};
  impl_->tier_bytes.Add(labels).Increment(static_cast<double>(bytes));
  if (seconds > 0 && bytes > 0)
    impl_->tier_bandwidth.Add(labels).Set(static_cast<double>(bytes) / seconds);
}

void prometheus_metrics::backup(double seconds, bool failed) {
  (failed ? impl_->backup_failed : impl_->backup_ok).Observe(seconds);
}

void prometheus_metrics::host_evicted(std::uint64_t tokens, std::uint64_t slots) {
  impl_->host_evicted_tokens.Increment(static_cast<double>(tokens));
  impl_->host_evicted_slots.Increment(static_cast<double>(slots));
}

void prometheus_metrics::fault(std::string_view kind) {
  impl_->faults_by(kind).Increment();
}

void prometheus_metrics::l3_loading(bool loading) {
  impl_->l3_loading.Set(loading ? 1 : 0);
}

void prometheus_metrics::build_info(std::string_view version, std::uint32_t protocol) {
  impl_->build.Add({{"version", std::string(version)}, {"protocol", std::to_string(protocol)}})
      .Set(1);
}

void prometheus_metrics::watch_l3(std::function<l3_figures()> read) {
  impl_->l3_store->watch(std::move(read));
}

}  // namespace hc
