// prometheus_metrics: what each call records is in the exposition under its series — the
// series the hot paths resolve once (every step, every match) and the ones added on use
// (a label value not known beforehand) — and an instance's pool gauges go with it.

#include "monitoring/prometheus_metrics.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/metric_value.hpp"

namespace hc::test {
namespace {

struct PrometheusMetrics : ::testing::Test {
  prometheus_metrics m;
  double at(const std::string& series) const { return metric_value(m, series); }
};

TEST_F(PrometheusMetrics, MatchesInsertsEvictionsAndOpsLandInTheirSeries) {
  m.l1_match(100, 50);
  m.l1_match(20, 0);
  EXPECT_EQ(at(R"(hybridcache_match_requests_total{tier="l1"})"), 2);
  EXPECT_EQ(at(R"(hybridcache_hit_tokens_total{component="kv",tier="l1"})"), 120);
  EXPECT_EQ(at(R"(hybridcache_hit_tokens_total{component="ssm",tier="l1"})"), 50);
  m.l2_hit(64);
  EXPECT_EQ(at(R"(hybridcache_match_requests_total{tier="l2"})"), 1);
  EXPECT_EQ(at(R"(hybridcache_hit_tokens_total{component="kv",tier="l2"})"), 64);
  EXPECT_EQ(at(R"(hybridcache_hit_tokens_total{component="ssm",tier="l2"})"), 64);
  m.prefetch("truncated", 32, 16, 0.01);
  m.prefetch("revoked", 0, 0, 0);
  EXPECT_EQ(at(R"(hybridcache_prefetch_total{outcome="truncated"})"), 1);
  EXPECT_EQ(at(R"(hybridcache_prefetch_total{outcome="revoked"})"), 1);
  EXPECT_EQ(at(R"(hybridcache_match_requests_total{tier="l3"})"), 1);
  EXPECT_EQ(at(R"(hybridcache_hit_tokens_total{component="kv",tier="l3"})"), 32);
  EXPECT_EQ(at(R"(hybridcache_hit_tokens_total{component="ssm",tier="l3"})"), 16);
  EXPECT_EQ(at("hybridcache_prefetch_seconds_count"), 1);

  m.queried_tokens(300);
  m.queried_tokens(21);
  EXPECT_EQ(at("hybridcache_queried_tokens_total"), 321);
  m.inserted_tokens(7);
  m.inserted_tokens(5);
  EXPECT_EQ(at("hybridcache_inserted_tokens_total"), 12);
  m.evicted("pressure", 10, 1);
  m.evicted("explicit", 3, 2);
  EXPECT_EQ(at(R"(hybridcache_evicted_tokens_total{reason="pressure"})"), 10);
  EXPECT_EQ(at(R"(hybridcache_evicted_slots_total{reason="pressure"})"), 1);
  EXPECT_EQ(at(R"(hybridcache_evicted_tokens_total{reason="explicit"})"), 3);
  EXPECT_EQ(at(R"(hybridcache_evicted_slots_total{reason="explicit"})"), 2);
  m.tombstones("split", 4);
  EXPECT_EQ(at(R"(hybridcache_tombstones_created_total{cause="split"})"), 4);
  EXPECT_EQ(at(R"(hybridcache_tombstones_created_total{cause="eviction"})"), 0);
  m.forward_ops(1, 2, 3);
  EXPECT_EQ(at(R"(hybridcache_forward_ops_total{op="snapshot"})"), 1);
  EXPECT_EQ(at(R"(hybridcache_forward_ops_total{op="clear"})"), 2);
  EXPECT_EQ(at(R"(hybridcache_forward_ops_total{op="cow"})"), 3);
  m.command_error("match");
  EXPECT_EQ(at(R"(hybridcache_command_errors_total{command="match"})"), 1);
  EXPECT_EQ(at(R"(hybridcache_command_errors_total{command="finish"})"), 0);
}

TEST_F(PrometheusMetrics, RpcsBackupsAndFaultsLandInTheirSeries) {
  m.rpc("step", 2e-5);
  m.rpc("step", 3e-5);
  m.rpc("ping", 1e-6);
  EXPECT_EQ(at(R"(hybridcache_rpc_latency_seconds_count{method="step"})"), 2);
  EXPECT_EQ(at(R"(hybridcache_rpc_latency_seconds_count{method="ping"})"), 1);
  EXPECT_EQ(at(R"(hybridcache_rpc_latency_seconds_count{method="open"})"), 0);
  EXPECT_EQ(at(R"(hybridcache_rpc_latency_seconds_bucket{method="step",le="2.5e-05"})"), 1);
  m.backup(0.5, false);
  m.backup(0.5, true);
  m.backup(0.5, true);
  EXPECT_EQ(at(R"(hybridcache_backup_seconds_count{result="ok"})"), 1);
  EXPECT_EQ(at(R"(hybridcache_backup_seconds_count{result="failed"})"), 2);
  m.fault("l3_full");
  EXPECT_EQ(at(R"(hybridcache_faults_total{kind="l3_full"})"), 1);
  m.fence_wait(1e-3);
  EXPECT_EQ(at("hybridcache_forward_fence_wait_seconds_count"), 1);
}

// A label value the node did not know beforehand still gets its series, added on use.
TEST_F(PrometheusMetrics, AValueNotKnownBeforehandGetsASeriesOfItsOwn) {
  EXPECT_EQ(at(R"(hybridcache_rpc_latency_seconds_count{method="later"})"), -1);
  m.rpc("later", 1e-3);
  EXPECT_EQ(at(R"(hybridcache_rpc_latency_seconds_count{method="later"})"), 1);
  m.fault("later_fault");
  m.fault("later_fault");
  EXPECT_EQ(at(R"(hybridcache_faults_total{kind="later_fault"})"), 2);
  m.evicted("later_reason", 9, 8);
  EXPECT_EQ(at(R"(hybridcache_evicted_tokens_total{reason="later_reason"})"), 9);
  m.command_error("later_command");
  EXPECT_EQ(at(R"(hybridcache_command_errors_total{command="later_command"})"), 1);
}

TEST_F(PrometheusMetrics, AnInstancesPoolGaugesFollowItAndGoWhenItCloses) {
  pool_gauges g{.kv_capacity = 4096,
                .kv_used = 100,
                .kv_evictable = 60,
                .kv_protected = 40,
                .slot_capacity = 64,
                .slot_used = 3,
                .slot_evictable = 2,
                .slot_protected = 1,
                .kv_pinned = 30,
                .pins = 2};
  m.pools(7, g);
  m.pools(8, g);
  g.kv_used = 200;
  g.slot_used = 5;
  m.pools(7, g);
  EXPECT_EQ(at(R"(hybridcache_kv_pool_tokens{instance="7",state="capacity"})"), 4096);
  EXPECT_EQ(at(R"(hybridcache_kv_pool_tokens{instance="7",state="used"})"), 200);
  EXPECT_EQ(at(R"(hybridcache_kv_pool_tokens{instance="7",state="evictable"})"), 60);
  EXPECT_EQ(at(R"(hybridcache_kv_pool_tokens{instance="7",state="protected"})"), 40);
  EXPECT_EQ(at(R"(hybridcache_ssm_pool_slots{instance="7",state="capacity"})"), 64);
  EXPECT_EQ(at(R"(hybridcache_ssm_pool_slots{instance="7",state="used"})"), 5);
  EXPECT_EQ(at(R"(hybridcache_ssm_pool_slots{instance="7",state="evictable"})"), 2);
  EXPECT_EQ(at(R"(hybridcache_ssm_pool_slots{instance="7",state="protected"})"), 1);
  EXPECT_EQ(at(R"(hybridcache_kv_pool_tokens{instance="7",state="pinned"})"), 30);
  EXPECT_EQ(at(R"(hybridcache_ssm_pool_slots{instance="7",state="pinned"})"), 2);
  EXPECT_EQ(at(R"(hybridcache_kv_pool_tokens{instance="8",state="used"})"), 100);

  m.instance_closed(7);
  EXPECT_EQ(at(R"(hybridcache_kv_pool_tokens{instance="7",state="used"})"), -1);
  EXPECT_EQ(at(R"(hybridcache_ssm_pool_slots{instance="7",state="capacity"})"), -1);
  EXPECT_EQ(at(R"(hybridcache_kv_pool_tokens{instance="7",state="pinned"})"), -1);
  EXPECT_EQ(at(R"(hybridcache_kv_pool_tokens{instance="8",state="used"})"), 100)
      << "another instance's series stay";
  m.pools(7, g);  // an id seen again gets its series again
  EXPECT_EQ(at(R"(hybridcache_kv_pool_tokens{instance="7",state="used"})"), 200);

  EXPECT_EQ(m.text().find("hybridcache_host_kv_pool_tokens{"), std::string::npos)
      << "no host tier, no host pool series";
  g.host = true;
  g.host_kv_capacity = 16384;
  g.host_kv_used = 512;
  g.host_slot_capacity = 130;
  g.host_slot_used = 3;
  m.pools(7, g);
  EXPECT_EQ(at(R"(hybridcache_host_kv_pool_tokens{instance="7",state="capacity"})"), 16384);
  EXPECT_EQ(at(R"(hybridcache_host_kv_pool_tokens{instance="7",state="used"})"), 512);
  EXPECT_EQ(at(R"(hybridcache_host_ssm_pool_slots{instance="7",state="capacity"})"), 130);
  EXPECT_EQ(at(R"(hybridcache_host_ssm_pool_slots{instance="7",state="used"})"), 3);
  EXPECT_EQ(m.text().find("hybridcache_host_kv_pool_tokens{instance=\"8\""), std::string::npos);
  m.instance_closed(7);
  EXPECT_EQ(at(R"(hybridcache_host_kv_pool_tokens{instance="7",state="used"})"), -1);
  EXPECT_EQ(at(R"(hybridcache_host_ssm_pool_slots{instance="7",state="capacity"})"), -1);
}

// Instances' actors set their gauges from several threads while others open and close.
TEST_F(PrometheusMetrics, PoolGaugesOfManyInstancesFromManyThreads) {
  std::vector<std::thread> ts;
  for (std::uint64_t t = 0; t < 4; ++t)
    ts.emplace_back([this, t] {
      pool_gauges g;
      for (std::uint64_t i = 0; i < 500; ++i) {
        const std::uint64_t instance = 100 * t + i % 10;
        g.kv_used = i;
        m.pools(instance, g);
        m.l1_match(1, 1);
        m.rpc("step", 1e-5);
        if (i % 7 == 0) m.instance_closed(instance);
      }
      g.kv_used = 1000 + t;
      m.pools(100 * t, g);
    });
  for (auto& t : ts)
    t.join();
  EXPECT_EQ(at(R"(hybridcache_match_requests_total{tier="l1"})"), 2000);
  EXPECT_EQ(at(R"(hybridcache_rpc_latency_seconds_count{method="step"})"), 2000);
  for (std::uint64_t t = 0; t < 4; ++t)
    EXPECT_EQ(at("hybridcache_kv_pool_tokens{instance=\"" + std::to_string(100 * t) +
                 "\",state=\"used\"}"),
              1000 + t);
}

// The process series follow what the process does: descriptors it opens, memory it
// touches, a thread it starts; the limit and the start time are the kernel's.
TEST_F(PrometheusMetrics, ProcessSeriesFollowTheProcess) {
  const double fds = at("process_open_fds");
  ASSERT_GE(fds, 3) << m.text();
  std::vector<int> opened;
  for (int i = 0; i < 50; ++i)
    opened.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(at("process_open_fds"), fds + 50);
  for (int fd : opened)
    ::close(fd);
  EXPECT_EQ(at("process_open_fds"), fds);

  rlimit nofile{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &nofile), 0);
  EXPECT_EQ(at("process_max_fds"), static_cast<double>(nofile.rlim_cur));

  const double resident = at("process_resident_memory_bytes");
  constexpr std::size_t touched = std::size_t{64} << 20;
  std::vector<char> block(touched, 1);  // every page written
  EXPECT_GE(at("process_resident_memory_bytes"), resident + 0.9 * touched);
  EXPECT_GE(at("process_virtual_memory_bytes"), at("process_resident_memory_bytes"));
  block = {};

  // A first thread, started and joined before counting: ThreadSanitizer's runtime starts
  // a helper thread of its own with the process's first pthread_create, which would count
  // as the test's.
  std::thread([] {}).join();
  const double threads = at("process_threads");
  std::promise<void> go;
  std::thread extra([done = go.get_future()]() mutable { done.wait(); });
  EXPECT_EQ(at("process_threads"), threads + 1);
  go.set_value();
  extra.join();

  const double started = at("process_start_time_seconds");
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(started, now + 1);  // the kernel's clock ticks: 10 ms steps
  EXPECT_GT(started, now - 3600) << "this test's process started within the hour";

  rusage ru{};
  ASSERT_EQ(::getrusage(RUSAGE_SELF, &ru), 0);
  const double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  EXPECT_GE(at("process_cpu_seconds_total"), cpu);
  EXPECT_NE(m.text().find("# TYPE process_cpu_seconds_total counter"), std::string::npos);
}

// Out of descriptors — when the count matters most — a scrape still reports it: it opens
// no file (the /proc files were opened when the metrics were made).
TEST_F(PrometheusMetrics, OutOfDescriptorsTheScrapeStillCountsThem) {
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  const double open_now = at("process_open_fds");
  ASSERT_GT(open_now, 0);
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(open_now) + 32;
  // Descriptors numbered at or above the lowered limit (a shell or CI runner may pass one
  // down, e.g. 251) stay open and count, but do not stop an open below the limit.
  double above_limit = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
    if (std::stoul(entry.path().filename().string()) >= low.rlim_cur) ++above_limit;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> opened;
  for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;)
    opened.push_back(fd);
  const int why = errno;
  const double counted = at("process_open_fds");
  const double limit = at("process_max_fds");
  for (int fd : opened)
    ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_EQ(why, EMFILE);
  EXPECT_EQ(limit, static_cast<double>(low.rlim_cur));
  EXPECT_EQ(counted, static_cast<double>(low.rlim_cur) + above_limit)
      << "every descriptor below the limit is in use, and " << above_limit << " above it";
}

TEST_F(PrometheusMetrics, BuildInfoNamesTheReleaseAndProtocol) {
  EXPECT_EQ(m.text().find("hybridcache_build_info{"), std::string::npos) << "not before it is set";
  m.build_info("1.2.3", 7);
  EXPECT_EQ(at(R"(hybridcache_build_info{protocol="7",version="1.2.3"})"), 1);
}

// The L3 gauges are what the store says at each scrape, and absent without a store.
TEST_F(PrometheusMetrics, L3SeriesAreReadFromTheStoreAtEachScrape) {
  for (const char* series :
       {"hybridcache_l3_values", "hybridcache_l3_bytes", "hybridcache_l3_evicted_values_total"})
    EXPECT_EQ(m.text().find(series), std::string::npos) << series << ": no store, no series";
  l3_figures now{3, 3000, 1 << 20, 0};
  m.watch_l3([&now] { return now; });
  EXPECT_EQ(at("hybridcache_l3_values"), 3);
  EXPECT_EQ(at(R"(hybridcache_l3_bytes{state="used"})"), 3000);
  EXPECT_EQ(at(R"(hybridcache_l3_bytes{state="capacity"})"), 1 << 20);
  EXPECT_EQ(at("hybridcache_l3_evicted_values_total"), 0);
  now = {7, 9000, 1 << 20, 2};
  EXPECT_EQ(at("hybridcache_l3_values"), 7);
  EXPECT_EQ(at(R"(hybridcache_l3_bytes{state="used"})"), 9000);
  EXPECT_EQ(at("hybridcache_l3_evicted_values_total"), 2);
  EXPECT_NE(m.text().find("# TYPE hybridcache_l3_evicted_values_total counter"), std::string::npos);
}

}  // namespace
}  // namespace hc::test
