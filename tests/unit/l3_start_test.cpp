// hybridcached's L3 start (actors/daemon/l3_start.hpp): an index of at most
// --l3-background-load-above records is read before the node serves (the store itself
// comes back), a larger one while it serves (a loading_store that serves once read); the
// hybridcache_l3_loading gauge is 0 whenever nothing is being read; a corruption moved
// aside at open or found while serving is a fault, and an index that cannot be read while
// serving leaves the node without its L3 tier (a fault too), not stopped. The warm restart
// through the real daemon, both ways: tests/rpc/warm_restart_process_test.cpp.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "actors/daemon/l3_start.hpp"
#include "storage/loading_store.hpp"
#include "tests/support/damaged_index.hpp"
#include "tests/support/node_fixture.hpp"
#include "tests/support/temp_dir.hpp"

namespace hc::test {
namespace {

/// A store of `n` values in `dir`, closed.
rocksdb_store_config filled(temp_dir& dir, int n) {
  rocksdb_store_config cfg;
  cfg.path = dir.sub("l3");
  auto st = rocksdb_store::open(cfg);
  EXPECT_TRUE(st.ok()) << st.err().message;
  for (int i = 0; i < n && st.ok(); ++i)
    EXPECT_TRUE((*st)->set(l3_pool::kv_page, std::to_string(i), std::vector<std::byte>(8)).ok());
  return cfg;
}

/// start_l3_store of the store in cfg.path, opened unloaded.
result<std::shared_ptr<l3_store>> start(const rocksdb_store_config& cfg,
                                        std::uint64_t background_above, prometheus_metrics& m) {
  auto unloaded = rocksdb_store::open_unloaded(cfg);
  if (!unloaded) return unloaded.err();
  return start_l3_store(std::move(*unloaded), cfg, background_above, m);
}

TEST(L3Start, TheGaugeExistsAndFollowsWhatItIsTold) {
  prometheus_metrics m;
  EXPECT_EQ(metric_value(m, "hybridcache_l3_loading"), 0) << m.text();
  m.l3_loading(true);
  EXPECT_EQ(metric_value(m, "hybridcache_l3_loading"), 1);
  m.l3_loading(false);
  EXPECT_EQ(metric_value(m, "hybridcache_l3_loading"), 0);
}

TEST(L3Start, ASmallIndexIsReadBeforeTheNodeServes) {
  temp_dir dir;
  const rocksdb_store_config cfg = filled(dir, 10);
  prometheus_metrics m;
  auto st = start(cfg, 100, m);
  ASSERT_TRUE(st.ok()) << st.err().message;
  EXPECT_EQ(dynamic_cast<loading_store*>(st->get()), nullptr) << "the store itself";
  EXPECT_EQ((*st)->usage().values, 10u);
  EXPECT_FALSE((*st)->usage().loading);
  EXPECT_EQ(metric_value(m, "hybridcache_l3_loading"), 0);
}

TEST(L3Start, ALargerIndexIsReadWhileTheNodeServes) {
  temp_dir dir;
  const rocksdb_store_config cfg = filled(dir, 10);
  prometheus_metrics m;
  auto st = start(cfg, 0, m);  // 0: always while serving
  ASSERT_TRUE(st.ok()) << st.err().message;
  auto* loading = dynamic_cast<loading_store*>(st->get());
  ASSERT_NE(loading, nullptr);
  ASSERT_TRUE(loading->wait().ok());
  EXPECT_EQ((*st)->usage().values, 10u);
  EXPECT_TRUE((*st)->exists(l3_pool::kv_page, "3"));
  EXPECT_EQ(metric_value(m, "hybridcache_l3_loading"), 0) << "back to 0 once read";
  EXPECT_EQ(metric_value(m, R"(hybridcache_faults_total{kind="l3_read_error"})"), 0);
}

TEST(L3Start, ACorruptIndexMovedAsideAtOpenIsAFault) {
  temp_dir dir;
  rocksdb_store_config cfg = filled(dir, 10);
  {
    std::FILE* f = std::fopen((cfg.path + "/index/CURRENT").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("no such manifest\n", f);
    std::fclose(f);
  }
  cfg.quarantine_corrupt = true;
  prometheus_metrics m;
  auto unloaded = rocksdb_store::open_unloaded(cfg);
  ASSERT_TRUE(unloaded.ok()) << unloaded.err().message;
  ASSERT_FALSE((*unloaded)->quarantined().empty());
  auto st = start_l3_store(std::move(*unloaded), cfg, 100, m);
  ASSERT_TRUE(st.ok()) << st.err().message;
  EXPECT_EQ((*st)->usage().values, 0u) << "an empty store in its place";
  EXPECT_EQ(metric_value(m, R"(hybridcache_faults_total{kind="l3_corrupt_store"})"), 1);
}

// An index that cannot be read while the node serves leaves the node without its L3 tier,
// not stopped: the tier misses and refuses its writes with the reason, the loading gauge
// goes back to 0, and the failure is a fault an operator sees.
TEST(L3Start, AnIndexThatCannotBeReadWhileServingIsAFaultAndTheTierMisses) {
  temp_dir dir;
  rocksdb_store_config cfg = filled(dir, 5000);  // one table of many data blocks
  ASSERT_NO_FATAL_FAILURE(damage_index_tables(cfg.path));
  cfg.quarantine_corrupt = false;  // kept as it is: the read fails
  prometheus_metrics m;
  auto st = start(cfg, 0, m);
  ASSERT_TRUE(st.ok()) << "the open itself succeeds: " << st.err().message;
  auto* loading = dynamic_cast<loading_store*>(st->get());
  ASSERT_NE(loading, nullptr);
  const status read = loading->wait();
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.err().message.find("Corruption"), std::string::npos) << read.err().message;
  EXPECT_FALSE((*st)->usage().loading);
  EXPECT_EQ((*st)->usage().values, 0u);
  EXPECT_FALSE((*st)->exists(l3_pool::kv_page, "3"));
  std::vector<std::byte> out;
  EXPECT_EQ((*st)->get(l3_pool::kv_page, "3", out).err().code, errc::not_found);
  EXPECT_FALSE((*st)->set(l3_pool::kv_page, "new", std::vector<std::byte>(8)).ok());
  EXPECT_EQ(metric_value(m, "hybridcache_l3_loading"), 0);
  EXPECT_EQ(metric_value(m, R"(hybridcache_faults_total{kind="l3_read_error"})"), 1) << m.text();
  EXPECT_TRUE(std::filesystem::exists(cfg.path + "/index")) << "nothing moved aside";
}

// The same corruption with the node's setting (moved aside): the tier serves an empty store
// once the read found it, and the corruption is a fault.
TEST(L3Start, ACorruptionFoundWhileServingIsMovedAsideAndIsAFault) {
  temp_dir dir;
  rocksdb_store_config cfg = filled(dir, 5000);
  ASSERT_NO_FATAL_FAILURE(damage_index_tables(cfg.path));
  cfg.quarantine_corrupt = true;
  prometheus_metrics m;
  auto st = start(cfg, 0, m);
  ASSERT_TRUE(st.ok()) << st.err().message;
  auto* loading = dynamic_cast<loading_store*>(st->get());
  ASSERT_NE(loading, nullptr);
  ASSERT_TRUE(loading->wait().ok());
  EXPECT_EQ((*st)->usage().values, 0u) << "an empty store in its place";
  EXPECT_TRUE(std::filesystem::exists(cfg.path + ".corrupt/index"));
  ASSERT_TRUE((*st)->set(l3_pool::kv_page, "new", std::vector<std::byte>(8)).ok());
  EXPECT_TRUE((*st)->exists(l3_pool::kv_page, "new"));
  EXPECT_EQ(metric_value(m, R"(hybridcache_faults_total{kind="l3_corrupt_store"})"), 1) << m.text();
  EXPECT_EQ(metric_value(m, R"(hybridcache_faults_total{kind="l3_read_error"})"), 0);
  EXPECT_EQ(metric_value(m, "hybridcache_l3_loading"), 0);
}

}  // namespace
}  // namespace hc::test
