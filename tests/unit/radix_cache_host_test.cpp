// radix_cache::match with a host tier (found by hcsim): a prefix whose deepest state is
// on the host only has its state loaded back, and when that load cannot happen the match
// is cut back to the deepest node whose state is on the device — a request never resumes
// from a prefix without a state.
#include <gtest/gtest.h>

#include "actors/radix_cache/radix_cache.hpp"
#include "tests/support/tree_fixture.hpp"

namespace hc::test {
namespace {

struct HostMatch : ::testing::Test {
  radix_cache cache{[] {
    cache_config c;
    c.kv_tokens = 64;
    c.slots = 4;
    c.host_kv_tokens = 256;
    c.host_slots = 8;
    return c;
  }()};
  radix_tree& t = cache.tree();
  std::vector<token_id> A = iota_tokens(10, 16), AB = cat(A, iota_tokens(100, 16));

  /// Inserts root -> A -> AB with states and backs both up to the host.
  void build() {
    std::vector<kv_index> kv = alloc_kv(cache, 32);
    const slot_id sa = cache.slots().alloc_one(), sb = cache.slots().alloc_one();
    ASSERT_TRUE(t.insert(0, A, std::span(kv).first(16), sa).ok());
    ASSERT_TRUE(t.insert(0, AB, kv, sb, 16).ok());
    for (const auto& key : {A, AB}) {
      node_ref n = t.match(0, key).last_node;
      auto c = t.write_backup(n);
      ASSERT_TRUE(c.ok()) << c.err().message;
      ASSERT_TRUE(t.backup_done(n).ok());
    }
  }
};

TEST_F(HostMatch, AStateOnTheHostOnlyIsLoadedBack) {
  build();
  t.evict(0, 4);  // every device state goes: the leaf is demoted, A keeps its device KV
  auto raw = t.match(0, A);
  ASSERT_TRUE(raw.mamba_host_hit);
  ASSERT_EQ(raw.last_slot, no_slot);
  ASSERT_EQ(raw.best, raw.last_node) << "only the state is missing on the device";
  cow_match_result m = cache.match(0, A, /*cow=*/false, false);
  EXPECT_EQ(m.match.indices.size(), A.size());
  EXPECT_EQ(m.loaded_tokens, 0u) << "no KV to load, only the state";
  EXPECT_NE(m.match.last_slot, no_slot) << "the host state was loaded into a device slot";
  auto loads = cache.drain_loads();
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_EQ(loads[0].device_slot, m.match.last_slot);
  EXPECT_NE(loads[0].host_slot, no_slot);
  ASSERT_TRUE(cache.load_done(loads[0]).ok());
  EXPECT_TRUE(t.sanity_check().ok());
}

TEST_F(HostMatch, WithoutARoomForTheStateTheMatchStopsAtADeviceState) {
  build();
  t.evict(0, 4);
  // Device slots all taken by requests (not evictable): the state cannot come back.
  std::vector<slot_id> held;
  for (slot_id s; (s = cache.slots().alloc_one()) != no_slot;)
    held.push_back(s);
  cow_match_result m = cache.match(0, AB, false, false);
  EXPECT_EQ(m.match.last_slot, no_slot);
  EXPECT_TRUE(m.match.indices.empty()) << "no node on the path has a device state: no prefix";
  EXPECT_TRUE(cache.drain_loads().empty());
  for (slot_id s : held)
    ASSERT_TRUE(cache.slots().free_one(s).ok());
  EXPECT_TRUE(t.sanity_check().ok());
}

}  // namespace
}  // namespace hc::test
