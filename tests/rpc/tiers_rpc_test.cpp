// The tiers through the node, over RPC, the way a worker uses them: a request's prefix is
// written into the L1 pools by the "forward", inserted, backed up to the host (write-
// through) and to L3 by the actors; then either evicted from the device and loaded back
// (L2 hit), or the node restarts on the same store and a storage prefetch brings it back
// (L3 hit). Every restored KV byte and the restored SSM state are compared with the toy
// model. Faults injected into the store (failed and corrupt reads, failed writes) may only
// shorten what is restored: nothing corrupt is served, nothing leaks, and the request
// still runs. /metrics must count what happened.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <future>
#include <map>

#include "monitoring/prometheus_metrics.hpp"
#include "storage/loading_store.hpp"
#include "storage/memory_store.hpp"
#include "tests/support/faulty_store.hpp"
#include "tests/support/node_fixture.hpp"
#include "tests/support/toy_worker.hpp"

namespace hc::test {
namespace {

constexpr std::size_t prompt_len = toy_worker::prompt_len;

struct TiersRpc : ::testing::Test {
  prometheus_metrics metrics;
  memory_store mem{std::uint64_t{1} << 24};
  /// The node's clock: slow reads advance it, nothing sleeps; each reading moves it 1 µs so
  /// every timed transfer has a rate.
  manual_clock time{std::chrono::microseconds(1)};
  faulty_store faults{mem, &time};
  std::shared_ptr<l3_store> store{std::shared_ptr<l3_store>(), &faults};  // not owned
  std::unique_ptr<node> n;
  std::unique_ptr<rpc_server> server;
  std::string socket;
  std::unique_ptr<client> c;

  void SetUp() override { start(); }
  void TearDown() override { stop(); }

  void start() {
    node_config cfg;
    cfg.metrics = &metrics;
    cfg.l3 = store;
    cfg.max_idle_instances = 0;
    cfg.time_source = &time;
    n = std::make_unique<node>(cfg);
    server = std::make_unique<rpc_server>(*n, metrics);
    socket = unique_socket_path();
    rpc_server_config rc;
    rc.unix_path = socket;
    ASSERT_TRUE(server->start(rc).ok());
    auto cl = client::connect("unix:" + socket);
    ASSERT_TRUE(cl.ok()) << cl.err().message;
    c = std::move(*cl);
  }
  void stop() {
    w.reset();
    session.reset();
    c.reset();
    if (server) server->stop();
    if (n) n->shutdown();
    server.reset();
    n.reset();
  }
  /// A restart: the node (tree, L1 and L2) is gone; the L3 store stays.
  void restart() {
    stop();
    start();
  }

  std::unique_ptr<client_session> session;
  std::unique_ptr<toy_worker> w;

  /// Opens a session with `sp` and a worker on it.
  toy_worker& open(const instance_spec& sp = toy_worker::spec()) {
    w.reset();
    session.reset();
    auto s = c->open(sp);
    EXPECT_TRUE(s.ok()) << s.err().message;
    if (s.ok()) session = std::move(*s);
    w = std::make_unique<toy_worker>(toy_worker{*session, c.get()});
    return *w;
  }
  /// A worker serves the prompt, its backup reaches L3, and the node restarts.
  void serve_store_and_restart() {
    open().serve(1);
    ASSERT_TRUE(stored_in_l3()) << "the write-through backup never reached L3";
    restart();
  }
  /// Request 2 (prefetched or not) finds no resumable prefix: it recomputes, and the
  /// instance is idle and sane afterwards.
  static void expect_recompute(toy_worker& wk) {
    const res::match m = wk.admit_and_check(2);
    EXPECT_EQ(m.prefix_len, 0u) << "no resumable prefix: the request recomputes";
    wk.abort_and_check_idle(2);
  }
  /// Request 2 continues the prompt, which is on the host only: the match loads all of it
  /// back, every byte checked.
  static void expect_loaded_back(toy_worker& wk) {
    expect_ok(wk.step({create(2, wk.continuation())})[0]);
    const res::match m = wk.admit_and_check(2);
    EXPECT_EQ(m.prefix_len, prompt_len);
    EXPECT_EQ(m.loaded_tokens, prompt_len);
    wk.abort_and_check_idle(2);
  }
  /// Waits until the prompt's pages and state are in L3.
  bool stored_in_l3() {
    return after_drain(*c, [&] { return mem.usage().values >= prompt_len + 1; });
  }
  nlohmann::json host_of_instance() {
    auto j = c->inspect();
    EXPECT_TRUE(j.ok());
    auto doc = nlohmann::json::parse(j.ok() ? *j : "{}");
    return doc["instances"].empty() ? nlohmann::json() : doc["instances"][0]["tree"]["host"];
  }
  double metric(const std::string& series) const { return metric_value(metrics, series); }
};

TEST_F(TiersRpc, WarmRestartServesThePrefixFromL3ByteForByte) {
  ASSERT_NO_FATAL_FAILURE(serve_store_and_restart());
  toy_worker& w2 = open();
  const res::prefetch p = w2.prefetch(2);
  EXPECT_EQ(p.outcome, "completed");
  EXPECT_EQ(p.storage_hit_tokens, prompt_len);
  const res::match m = w2.admit_and_check(2);
  EXPECT_EQ(m.prefix_len, prompt_len) << "the L3 hit must cover the whole prompt";
  EXPECT_EQ(m.loaded_tokens, prompt_len);
  w2.abort_and_check_idle(2);
  EXPECT_EQ(metric(R"(hybridcache_prefetch_total{outcome="completed"})"), 1);
  EXPECT_EQ(metric(R"(hybridcache_hit_tokens_total{component="kv",tier="l3"})"), prompt_len);
  EXPECT_EQ(metric(R"(hybridcache_hit_tokens_total{component="kv",tier="l2"})"), prompt_len);
  EXPECT_GT(metric(R"(hybridcache_tier_bytes_total{direction="read",tier="l3"})"), 0);
  EXPECT_GT(metric(R"(hybridcache_tier_bytes_total{direction="write",tier="l3"})"), 0);
  EXPECT_GT(metric(R"(hybridcache_tier_bandwidth_bytes_per_second{direction="read",tier="l3"})"),
            0);
  EXPECT_GT(metric(R"(hybridcache_tier_bandwidth_bytes_per_second{direction="read",tier="l2"})"),
            0);
  EXPECT_GT(metric(R"(hybridcache_backup_seconds_count{result="ok"})"), 0);
}

// hybridcached reads a large L3 index while it serves (actors/daemon/l3_start.cpp): a
// node whose store is still loading serves at once — a prefetch finds nothing and the
// request recomputes, a backup is skipped (neither a failure nor a fault) and inspect says
// so; once the index is read the same prompt is an L3 hit. The store's opener here waits
// for the test, so the loading state holds for as long as the test needs it.
TEST_F(TiersRpc, AStoreStillReadingItsIndexMissesSkipsBackupsThenServes) {
  ASSERT_NO_FATAL_FAILURE(serve_store_and_restart());
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto loading = std::make_shared<loading_store>(
      std::uint64_t{1} << 24,
      [behind = store,
       released](const std::atomic<bool>& stop) -> result<std::shared_ptr<l3_store>> {
        while (released.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready)
          if (stop.load()) return error{errc::io_error, "stopped"};
        return behind;  // the faulty store over `mem`, holding the prompt
      });
  store = loading;
  restart();
  toy_worker& wk = open();
  const res::prefetch p = wk.prefetch(2);
  EXPECT_EQ(p.outcome, "revoked") << "nothing is found while the index is read";
  EXPECT_EQ(p.storage_hit_tokens, 0u);
  expect_recompute(wk);
  const std::uint64_t values = mem.usage().values;
  wk.K = iota_tokens(7000, prompt_len);
  wk.serve(3);
  ASSERT_TRUE(after_drain(*c, [&] {
    const auto h = host_of_instance();
    return h.value("l3_writes", 0u) >= 1 &&
           h.value("l3_writes_skipped", 0u) == h.value("l3_writes", 0u);
  })) << host_of_instance().dump();
  EXPECT_EQ(host_of_instance().value("l3_write_failures", 1u), 0u);
  EXPECT_EQ(mem.usage().values, values) << "nothing was written";
  auto doc = nlohmann::json::parse(*c->inspect());
  EXPECT_TRUE(doc["host_storage"]["l3"]["loading"].get<bool>()) << doc["host_storage"].dump();
  EXPECT_GE(doc["host_storage"]["l3"]["backups_skipped_loading"].get<int>(), 1);
  EXPECT_EQ(metric(R"(hybridcache_faults_total{kind="l3_write_error"})"), 0);
  EXPECT_EQ(metric(R"(hybridcache_backup_seconds_count{result="failed"})"), 0);

  release.set_value();
  ASSERT_TRUE(loading->wait().ok());
  toy_worker& w2 = open();  // the first prompt again, on the same node
  const res::prefetch hit = w2.prefetch(2);
  EXPECT_EQ(hit.outcome, "completed") << "the prompt stored before the restart is found";
  EXPECT_EQ(hit.storage_hit_tokens, prompt_len);
  w2.abort_and_check_idle(2);
  doc = nlohmann::json::parse(*c->inspect());
  EXPECT_FALSE(doc["host_storage"]["l3"]["loading"].get<bool>());
}

TEST_F(TiersRpc, AnEvictedPrefixIsLoadedBackFromTheHostByteForByte) {
  toy_worker& wk = open();
  wk.serve(1);
  ASSERT_TRUE(after_drain(*c, [&] {
    const auto h = host_of_instance();
    return h.value("backed_up_tokens", 0u) >= prompt_len &&
           h.value("kv_available", 0u) + prompt_len == h.value("kv_capacity", 0u);
  })) << host_of_instance().dump();
  const command_result r = wk.step({evict(256, 16)})[0];
  expect_ok(r);
  const res::evict ev = r.as<res::evict>();
  EXPECT_EQ(ev.tokens_freed_total, prompt_len) << "the backed-up prefix is demoted";
  {  // the host pools' gauges, as the step left them, are what inspect says now
    const nlohmann::json doc = nlohmann::json::parse(*c->inspect());
    const std::string id =
        std::to_string(doc["instances"][0]["tree"]["instance"].get<std::uint64_t>());
    const nlohmann::json h = host_of_instance();
    const auto gauge = [&](const char* family, const char* state) {
      return metric(std::string(family) + "{instance=\"" + id + "\",state=\"" + state + "\"}");
    };
    EXPECT_EQ(gauge("hybridcache_host_kv_pool_tokens", "capacity"), h.value("kv_capacity", 0u));
    EXPECT_EQ(gauge("hybridcache_host_kv_pool_tokens", "used"),
              h.value("kv_capacity", 0u) - h.value("kv_available", 0u));
    EXPECT_GE(gauge("hybridcache_host_kv_pool_tokens", "used"), prompt_len);
    EXPECT_EQ(gauge("hybridcache_host_ssm_pool_slots", "capacity"), h.value("slot_capacity", 0u));
    EXPECT_EQ(gauge("hybridcache_host_ssm_pool_slots", "used"),
              h.value("slot_capacity", 0u) - h.value("slot_available", 0u));
  }
  expect_loaded_back(wk);
  EXPECT_EQ(metric(R"(hybridcache_match_requests_total{tier="l2"})"), 1);
}

// The token hit rate has its denominator: the tokens the matches looked up (each key, the
// prompt but its last token), in the node's stats, inspect and /metrics alike, beside the
// KV hits of L1 and L2 (disjoint parts of a match); and the stats have the host tier's
// pools and traffic as inspect has them.
TEST_F(TiersRpc, TheStatsHaveTheHitRatesDenominatorAndTheHostTier) {
  toy_worker& wk = open();
  wk.serve(1);  // a miss: K's key is K but its last token
  ASSERT_TRUE(after_drain(*c, [&] {
    return host_of_instance().value("backed_up_tokens", 0u) >= prompt_len;
  })) << host_of_instance().dump();
  expect_ok(wk.step({evict(256, 16)})[0]);
  expect_loaded_back(wk);  // request 2, K + 1 token: its whole key comes back from L2
  expect_ok(wk.step({create(3, wk.continuation())})[0]);
  EXPECT_EQ(wk.admit_and_check(3).kv_matched, prompt_len);  // now an L1 hit
  wk.abort_and_check_idle(3);

  const double queried = (prompt_len - 1) + prompt_len + prompt_len;
  EXPECT_EQ(metric("hybridcache_queried_tokens_total"), queried);
  EXPECT_EQ(metric(R"(hybridcache_hit_tokens_total{component="kv",tier="l1"})"), prompt_len);
  EXPECT_EQ(metric(R"(hybridcache_hit_tokens_total{component="kv",tier="l2"})"), prompt_len);
  auto stats = c->stats();
  ASSERT_TRUE(stats.ok()) << stats.err().message;
  std::map<std::string, double> by_name(stats->begin(), stats->end());
  EXPECT_EQ(by_name["queried_tokens"], queried);
  EXPECT_EQ(by_name["matched_kv_tokens"], 2 * prompt_len);
  const nlohmann::json doc = nlohmann::json::parse(*c->inspect());
  EXPECT_EQ(doc["instances"][0]["tree"]["served"]["queried_tokens"].get<double>(), queried);
  // The host tier's pools and traffic are in the stats too, as inspect has them.
  const nlohmann::json& host = doc["instances"][0]["tree"]["host"];
  EXPECT_EQ(by_name["loaded_back_tokens"], prompt_len);
  EXPECT_GE(by_name["backed_up_tokens"], prompt_len);
  for (const auto& [name, field] :
       std::map<std::string, std::string>{{"host_kv_tokens_capacity", "kv_capacity"},
                                          {"host_kv_tokens_free", "kv_available"},
                                          {"host_ssm_slots_capacity", "slot_capacity"},
                                          {"host_ssm_slots_free", "slot_available"},
                                          {"backed_up_tokens", "backed_up_tokens"},
                                          {"loaded_back_tokens", "loaded_back_tokens"},
                                          {"demoted_tokens", "demoted_tokens"},
                                          {"host_evicted_tokens", "host_evicted_tokens"},
                                          {"host_evicted_slots", "host_evicted_slots"}})
    EXPECT_EQ(by_name[name], host[field].get<double>()) << name;
  EXPECT_GT(by_name["host_kv_tokens_capacity"], 0);
}

TEST_F(TiersRpc, WriteBackCopiesOnEvictionThenLoadsBackAndReachesL3) {
  instance_spec sp = toy_worker::spec();
  sp.hicache_write_policy = write_policy::write_back;
  toy_worker& wk = open(sp);
  wk.serve(1);
  EXPECT_EQ(host_of_instance().value("backed_up_tokens", 1u), 0u)
      << "write_back does not back up on insert";
  const command_result r = wk.step({evict(256, 16)})[0];
  expect_ok(r);
  const res::evict ev = r.as<res::evict>();
  EXPECT_EQ(ev.tokens_freed_total, prompt_len) << "the evicted leaf is backed up and demoted";
  ASSERT_TRUE(stored_in_l3()) << "a demoted node is written to L3 once its bytes are on the host";
  expect_loaded_back(wk);
}

TEST_F(TiersRpc, AFailedReadShortensThePrefetchAndTheRequestRecomputes) {
  ASSERT_NO_FATAL_FAILURE(serve_store_and_restart());
  toy_worker& wk = open();
  faults.fail_reads.insert(wk.page_keys()[20]);
  ::testing::internal::CaptureStderr();
  const res::prefetch p = wk.prefetch(2);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("warn  fault l3_read_error: a prefetch read failed after 20 of "),
            std::string::npos)
      << "the log says what failed: " << log;
  EXPECT_NE(log.find(" pages: injected read failure\n"), std::string::npos) << log;
  EXPECT_EQ(p.outcome, "partial");
  EXPECT_EQ(p.storage_hit_tokens, 20u) << "the pages before the failed one are kept";
  EXPECT_EQ(faults.state_reads, 0u) << "no state is read unless every page arrived";
  expect_recompute(wk);  // pages without a state are not resumable
  EXPECT_EQ(metric(R"(hybridcache_prefetch_total{outcome="partial"})"), 1);
  EXPECT_EQ(metric(R"(hybridcache_faults_total{kind="l3_read_error"})"), 1);
  EXPECT_EQ(metric(R"(hybridcache_faults_total{kind="l3_corrupt_value"})"), 0);
}

TEST_F(TiersRpc, ACorruptValueIsNeverServed) {
  ASSERT_NO_FATAL_FAILURE(serve_store_and_restart());
  toy_worker& wk = open();
  const std::string bad = wk.page_keys()[30];
  std::vector<std::byte> stored;
  ASSERT_TRUE(mem.get(l3_pool::kv_page, bad, stored).ok());
  std::vector<std::byte> garbage(stored.size() + 16, std::byte{0x5a});  // not a valid value
  ASSERT_TRUE(mem.overwrite_stored(l3_pool::kv_page, bad, garbage).ok());
  const res::prefetch p = wk.prefetch(2);
  EXPECT_EQ(p.outcome, "partial");
  EXPECT_EQ(p.storage_hit_tokens, 30u);
  EXPECT_FALSE(mem.exists(l3_pool::kv_page, bad)) << "a corrupt value is deleted";
  expect_recompute(wk);
  EXPECT_EQ(metric(R"(hybridcache_faults_total{kind="l3_corrupt_value"})"), 1);
  EXPECT_EQ(metric(R"(hybridcache_faults_total{kind="l3_read_error"})"), 0);
}

TEST_F(TiersRpc, FailedL3WritesAreCountedAndLaterBackupsStillRun) {
  faults.fail_writes_after = 0;  // every write fails
  toy_worker& wk = open();
  ::testing::internal::CaptureStderr();
  wk.serve(1);
  // Every backup of the first prompt has tried its L3 write (and failed) before the store
  // recovers: a write still on its way would land and the prompt would not be revoked.
  ASSERT_TRUE(after_drain(*c, [&] {
    const auto h = host_of_instance();
    const auto sent = h.value("backups_sent", 0u), writes = h.value("l3_writes", 0u);
    return sent >= 1 && writes == sent && h.value("l3_write_failures", 0u) == writes;
  })) << host_of_instance().dump();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("warn  fault l3_write_error: an L3 backup stopped after 0 of "),
            std::string::npos)
      << "the log says what failed: " << log;
  EXPECT_NE(log.find(" pages: injected write failure"), std::string::npos) << log;
  faults.fail_writes_after = SIZE_MAX;  // the store recovers: the next backup lands
  wk.K = iota_tokens(5000, prompt_len);
  wk.serve(3);
  EXPECT_TRUE(after_drain(*c, [&] { return mem.usage().values >= prompt_len + 1; }))
      << "a failed backup stopped the later ones";
  EXPECT_GT(metric(R"(hybridcache_backup_seconds_count{result="failed"})"), 0);
  EXPECT_EQ(metric(R"(hybridcache_faults_total{kind="l3_write_error"})"),
            metric(R"(hybridcache_backup_seconds_count{result="failed"})"));
  EXPECT_EQ(metric(R"(hybridcache_faults_total{kind="l3_full"})"), 0);
  restart();
  const res::prefetch p = open().prefetch(2);
  EXPECT_EQ(p.outcome, "revoked") << "nothing of the first prompt reached L3";
  w->abort_and_check_idle(2);
}

// The store's index began to fail writing to its disk (rocksdb_store: RocksDB retries,
// the writes go on in memory): a fault at the next L3 work, once per time it began, with a
// line that says what it means — writes still succeed, so no other fault would tell.
TEST_F(TiersRpc, AnIndexThatCannotWriteToItsDiskIsAFaultOnce) {
  toy_worker& wk = open();
  faults.index_failures = 1;
  ::testing::internal::CaptureStderr();
  wk.serve(1);
  ASSERT_TRUE(after_drain(
      *c, [&] { return metric(R"(hybridcache_faults_total{kind="l3_index_write_error"})") >= 1; }));
  wk.K = iota_tokens(5000, prompt_len);
  wk.serve(3);  // more L3 work: the same failure is not counted again
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(metric(R"(hybridcache_faults_total{kind="l3_index_write_error"})"), 1);
  EXPECT_NE(log.find("warn  fault l3_index_write_error: the L3 index cannot write to its disk"),
            std::string::npos)
      << log;
  EXPECT_EQ(metric(R"(hybridcache_faults_total{kind="l3_write_error"})"), 0);
}

TEST_F(TiersRpc, AFullStoreIsCountedAndTheNodeKeepsServing) {
  faults.fail_writes_after = 0;
  faults.write_error = errc::out_of_memory;  // what rocksdb_store says when the disk is full
  toy_worker& wk = open();
  wk.serve(1);
  ASSERT_TRUE(after_drain(*c, [&] {
    const auto h = host_of_instance();
    return h.value("l3_writes", 0u) >= 1 && h.value("l3_write_failures", 0u) >= 1;
  })) << host_of_instance().dump();
  EXPECT_GT(metric(R"(hybridcache_faults_total{kind="l3_full"})"), 0);
  EXPECT_EQ(metric(R"(hybridcache_faults_total{kind="l3_write_error"})"), 0);
  faults.fail_writes_after = SIZE_MAX;  // space again: the next prompt reaches L3
  wk.K = iota_tokens(5000, prompt_len);
  wk.serve(3);
  EXPECT_TRUE(after_drain(*c, [&] { return mem.usage().values >= prompt_len + 1; }));
}

TEST_F(TiersRpc, SlowReadsPastTheTimeoutEndTheWaitAndKeepWhatArrived) {
  ASSERT_NO_FATAL_FAILURE(serve_store_and_restart());
  instance_spec sp = toy_worker::spec();
  sp.prefetch_policy = prefetch_termination::timeout;  // min(30, 2 + 0.1 * 64 / 1024) s
  toy_worker& wk = open(sp);
  faults.read_delay = std::chrono::milliseconds(50);  // 64 pages: 3.2 s > 2 s on the clock
  faults.hold_reads();  // no read (no clock tick) before the first poll
  auto r = wk.step({create(2, wk.continuation()), cmd::prefetch{2}});
  expect_ok(r[1]);
  EXPECT_FALSE(r[1].as<res::prefetch>().ready) << "the timeout policy waits first";
  faults.release_reads();
  const res::prefetch last = wk.poll_prefetch(2);
  faults.read_delay = std::chrono::milliseconds(0);
  EXPECT_EQ(last.outcome, "timed_out");
  // The deadline is checked between read batches (128 pages): the pages that arrived are
  // kept, but the state — read only after them, and after the deadline — is not.
  EXPECT_GT(last.storage_hit_tokens, 0u) << "pages read before the deadline are kept";
  EXPECT_EQ(faults.state_reads, 0u);
  expect_recompute(wk);
  EXPECT_EQ(metric(R"(hybridcache_prefetch_total{outcome="timed_out"})"), 1);
  EXPECT_EQ(metric(R"(hybridcache_faults_total{kind="l3_timeout"})"), 1);
}

TEST_F(TiersRpc, BestEffortAdmitsAtOnceAndAnAbortedRequestReleasesItsPrefetch) {
  ASSERT_NO_FATAL_FAILURE(serve_store_and_restart());
  instance_spec sp = toy_worker::spec();
  sp.prefetch_policy = prefetch_termination::best_effort;
  toy_worker& wk = open(sp);
  faults.hold_reads();  // the abort comes while the prefetch's reads are still pending
  auto r = wk.step({create(2, wk.continuation()), cmd::prefetch{2}, cmd::abort{2}});
  faults.release_reads();
  expect_ok(r[1]);
  EXPECT_TRUE(r[1].as<res::prefetch>().ready) << "best_effort never waits";
  expect_ok(r[2]);
  ASSERT_TRUE(after_drain(*c, [&] {
    return host_of_instance()["prefetch"].value("aborted", 0u) == 1 &&
           host_of_instance().value("prefetches_in_flight", 1u) == 0;
  })) << host_of_instance().dump();
  const res::check idle = wk.step({cmd::check{/*full=*/true}})[0].as<res::check>();
  EXPECT_TRUE(idle.sanity) << idle.sanity_detail;
  const auto h = host_of_instance();
  EXPECT_EQ(h.value("kv_available", 0u) + h.value("tree_tokens", 0u), h.value("kv_capacity", 1u))
      << "every host id of the aborted prefetch came back";
  EXPECT_EQ(metric(R"(hybridcache_prefetch_total{outcome="aborted"})"), 1);
}

TEST_F(TiersRpc, PrefetchIsRefusedWithoutAHostTier) {
  instance_spec sp = toy_worker::spec();
  sp.hicache_ratio = 0;
  toy_worker& wk = open(sp);
  auto r = wk.step({create(1, wk.K), cmd::prefetch{1}});
  EXPECT_EQ(r[1].code, errc::invalid_argument);
  EXPECT_NE(r[1].error.find("hicacheRatio"), std::string::npos) << r[1].error;
}

TEST_F(TiersRpc, AHostTierThatIsNotLargerThanTheDeviceIsRefusedNamingTheOption) {
  instance_spec sp = toy_worker::spec();
  sp.hicache_ratio = 0.5;
  auto s = c->open(sp);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.err().code, errc::invalid_config);
  EXPECT_NE(s.err().message.find("hicacheRatio"), std::string::npos) << s.err().message;
}

// A pin of a prefix that pressure demoted to the host loads it back (loadedTokens) and holds
// it: the evictions that follow leave it on the device, and the next request reads every
// byte of it there, with nothing left to load.
TEST_F(TiersRpc, APinLoadsBackAPrefixHeldOnTheHostAndKeepsItOnTheDevice) {
  toy_worker& wk = open();
  wk.serve(1);
  ASSERT_TRUE(after_drain(*c, [&] {
    return host_of_instance().value("backed_up_tokens", 0u) >= prompt_len;
  })) << host_of_instance().dump();
  expect_ok(wk.step({evict(256, 16)})[0]);  // demoted: the prompt is on the host only
  const command_result r = wk.step({cmd::pin{0, wk.K, std::nullopt, 0}})[0];
  expect_ok(r);
  const res::pin p = r.as<res::pin>();
  EXPECT_NE(p.id, 0u);
  EXPECT_EQ(p.pinned_len, prompt_len);
  EXPECT_EQ(p.loaded_tokens, prompt_len);
  const command_result ev = wk.step({evict(256, 16)})[0];
  expect_ok(ev);
  EXPECT_EQ(ev.as<res::evict>().tokens_freed_total, 0u) << "the pinned prefix stays";
  expect_ok(wk.step({create(2, wk.continuation())})[0]);
  const res::match m = wk.admit_and_check(2);
  EXPECT_EQ(m.prefix_len, prompt_len);
  EXPECT_EQ(m.loaded_tokens, 0u) << "the pin loaded it already";
  expect_ok(wk.step({cmd::unpin{p.id}})[0]);
  wk.abort_and_check_idle(2);
}

// A host SSM pool sized on its own (hicacheSsmBytes, sglang#39436): the node gives it those
// slots beside a KV pool that follows the ratio; with more prompts than host slots, the
// host evicts checkpoints while its KV pool still has room, and /metrics counts the host
// tier's evictions as the stats do.
TEST_F(TiersRpc, AHostSsmPoolSizedOnItsOwnEvictsItsCheckpointsAndMetricsCountThem) {
  instance_spec sp = toy_worker::spec();
  sp.hicache_ratio = 8;                                     // 2048 host KV tokens: 32 prompts
  sp.hicache_ssm_bytes = 17 * toy_worker::state_bytes + 5;  // 17 slots, + 1
  toy_worker& wk = open(sp);
  constexpr std::size_t prompts = 24;
  for (std::size_t i = 0; i < prompts; ++i) {
    wk.K = iota_tokens(static_cast<int>(1000 * (i + 1)), prompt_len);
    wk.serve(i + 1);
    // Each prompt's backup ends before the next: the host's LRU order is the serving order.
    ASSERT_TRUE(after_drain(*c, [&] {
      return host_of_instance().value("backed_up_tokens", 0u) >= (i + 1) * prompt_len;
    })) << host_of_instance().dump();
  }
  expect_ok(wk.step({cmd::check{}})[0]);  // a step reports what the tiers did meanwhile
  const nlohmann::json host = host_of_instance();
  EXPECT_EQ(host.value("slot_capacity", 0u), 18u) << host.dump();
  EXPECT_EQ(host.value("kv_capacity", 0u), 8u * sp.kv_tokens) << "the KV pool follows the ratio";
  EXPECT_GT(host.value("host_evicted_slots", 0u), 0u) << host.dump();
  EXPECT_GT(host.value("kv_available", 0u), 0u) << "the SSM pool ran short first";
  auto stats = c->stats();
  ASSERT_TRUE(stats.ok()) << stats.err().message;
  std::map<std::string, double> by_name(stats->begin(), stats->end());
  EXPECT_EQ(by_name["host_ssm_slots_capacity"], 18);
  EXPECT_EQ(metric("hybridcache_host_evicted_slots_total"), by_name["host_evicted_slots"]);
  EXPECT_EQ(metric("hybridcache_host_evicted_tokens_total"), by_name["host_evicted_tokens"]);
  EXPECT_EQ(by_name["host_evicted_slots"], host.value("host_evicted_slots", 0u));
  // The last prompt's checkpoint is on the host still: it is resumable from there.
  expect_ok(wk.step({evict(sp.kv_tokens, sp.ssm_slots)})[0]);
  expect_loaded_back(wk);
}

TEST_F(TiersRpc, HostSsmBytesThatCannotWorkAreRefusedNamingTheField) {
  for (const auto& [set, words] :
       std::vector<std::pair<std::function<void(instance_spec&)>, std::string>>{
           {[](instance_spec& s) {
              s.hicache_ratio = 0;
              s.hicache_ssm_bytes = 1 << 20;
            },
            "needs hicacheRatio or hicacheBytes"},
           {[](instance_spec& s) {
              s.hicache_bytes = 1 << 20;
              s.hicache_ssm_bytes = 1 << 20;
            },
            "less than hicacheBytes"},
           {[](instance_spec& s) { s.hicache_ssm_bytes = 15 * toy_worker::state_bytes; },
            "larger than the device's 16 slots"}}) {
    instance_spec sp = toy_worker::spec();
    set(sp);
    auto s = c->open(sp);
    ASSERT_FALSE(s.ok()) << words;
    EXPECT_EQ(s.err().code, errc::invalid_config);
    EXPECT_NE(s.err().message.find("hicacheSsmBytes"), std::string::npos) << s.err().message;
    EXPECT_NE(s.err().message.find(words), std::string::npos) << s.err().message;
  }
}

// Demote (an agent's conversation waits on a tool): right after a turn, the conversation
// leaves the device — at once if its write-through backup is done, else when it is — and
// stays resumable: its next turn loads every byte back from the host.
TEST_F(TiersRpc, ADemotedConversationLeavesTheDeviceAndItsNextTurnLoadsItBack) {
  toy_worker& wk = open();
  wk.serve(1);
  const command_result r = wk.step({cmd::demote{0, wk.K, std::nullopt}})[0];
  expect_ok(r);
  const res::demote d = r.as<res::demote>();
  EXPECT_EQ(d.matched_tokens, prompt_len);
  EXPECT_EQ(d.demoted_tokens + d.deferred_tokens, prompt_len)
      << "demoted now, or once its backup in flight is done";
  EXPECT_EQ(d.evicted_tokens + d.kept_tokens, 0u) << "nothing dropped, nothing held";
  ASSERT_TRUE(after_drain(*c, [&] {
    return host_of_instance().value("demoted_tokens", 0u) >= prompt_len;
  })) << host_of_instance().dump();
  const command_result idle = wk.step({cmd::check{}})[0];
  expect_ok(idle);
  EXPECT_EQ(idle.pools.full_evictable + idle.pools.full_protected, 0u)
      << "nothing of it on the device";
  EXPECT_EQ(metric(R"(hybridcache_evicted_tokens_total{reason="explicit"})"), d.demoted_tokens);
  expect_loaded_back(wk);
}

// A demote leaves what a pin holds; without a host tier it evicts, and the next turn
// recomputes.
TEST_F(TiersRpc, ADemoteKeepsAPinnedPrefixAndWithoutAHostTierEvicts) {
  instance_spec sp = toy_worker::spec();
  sp.hicache_ratio = 0;
  toy_worker& wk = open(sp);
  wk.serve(1);
  const command_result pinned = wk.step({cmd::pin{0, wk.K, std::nullopt, 0}})[0];
  expect_ok(pinned);
  const res::demote kept = wk.step({cmd::demote{0, wk.K, std::nullopt}})[0].as<res::demote>();
  EXPECT_EQ(kept.kept_tokens, prompt_len) << "the pin holds it";
  EXPECT_EQ(kept.evicted_tokens + kept.demoted_tokens + kept.deferred_tokens, 0u);
  expect_ok(wk.step({cmd::unpin{pinned.as<res::pin>().id}})[0]);

  const command_result r = wk.step({cmd::demote{0, wk.K, std::nullopt}})[0];
  expect_ok(r);
  const res::demote d = r.as<res::demote>();
  EXPECT_EQ(d.evicted_tokens, prompt_len);
  EXPECT_EQ(d.slots_freed, 1u);
  EXPECT_EQ(d.demoted_tokens + d.deferred_tokens + d.kept_tokens, 0u);
  EXPECT_EQ(r.pools.full_evictable + r.pools.full_protected, 0u);
  EXPECT_EQ(metric(R"(hybridcache_evicted_tokens_total{reason="explicit"})"), prompt_len);
  EXPECT_EQ(metric(R"(hybridcache_evicted_tokens_total{reason="pressure"})"), 0);
  expect_ok(wk.step({create(2, wk.continuation())})[0]);
  expect_recompute(wk);
}

}  // namespace
}  // namespace hc::test
