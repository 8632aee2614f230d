// request_manager's quarantine (issue 6): ids a release frees while the session's stream
// may still write them — ops handed out for a batch that has not ended, or a forward in
// flight — are held back until that batch ended. Without this, another session could be
// given a slot (e.g. as a load-back destination) that a stale clear or COW of the first
// session then overwrites: hcsim with two workers and a host tier saw exactly that.
#include <gtest/gtest.h>

#include "actors/scheduler/request_manager.hpp"
#include "tests/support/tree_fixture.hpp"

namespace hc::test {
namespace {

struct quarantine : ::testing::Test {
  radix_cache cache{{1024, 1, 10, 64}};
  std::unique_ptr<request_manager> m;

  void SetUp() override {
    request_config rc;
    rc.strat = strategy::extra_buffer;
    rc.chunk_size = 64;
    rc.rows = 4;
    m = std::make_unique<request_manager>(rc, cache);
  }
  /// Admits request h with a 100-token prompt and its KV: working + 2 ping-pong slots.
  void admit(request_handle h) {
    ASSERT_TRUE(m->create(h, 0, iota_tokens(1000 * static_cast<int>(h), 100)).ok());
    ASSERT_TRUE(m->match(h).ok());
    ASSERT_TRUE(m->lock(h).ok());
    ASSERT_TRUE(m->alloc_req(h).ok());
    ASSERT_TRUE(m->alloc_kv(h, 0, 100).ok());
  }
  void expect_pools_conserved() {
    auto s = m->check_pool_invariants();
    EXPECT_TRUE(s.ok()) << s.err().message;
  }
};

TEST_F(quarantine, WithoutFenceReportsAReleaseFreesAtOnce) {
  admit(1);
  const std::size_t slots = cache.slots().available(), kv = cache.kv().available();
  ASSERT_TRUE(m->abort(1).ok());
  EXPECT_EQ(cache.slots().available(), slots + 3);
  EXPECT_EQ(cache.kv().available(), kv + 100);
  EXPECT_EQ(m->quarantined_slots(), 0u);
  expect_pools_conserved();
}

TEST_F(quarantine, AReleaseAfterOpsWereHandedOutWaitsForThatBatchToEnd) {
  admit(1);
  m->stream_claimed(1);  // take_ops for batch 1: its clear of the working slot is queued
  const std::size_t slots = cache.slots().available(), kv = cache.kv().available();
  ASSERT_TRUE(m->abort(1).ok());
  EXPECT_EQ(cache.slots().available(), slots) << "a queued op may still write these";
  EXPECT_EQ(cache.kv().available(), kv);
  EXPECT_EQ(m->quarantined_slots(), 3u);
  EXPECT_EQ(m->quarantined_kv_tokens(), 100u);
  expect_pools_conserved();  // quarantined ids count as held
  m->stream_ended(1);
  EXPECT_EQ(cache.slots().available(), slots + 3);
  EXPECT_EQ(cache.kv().available(), kv + 100);
  EXPECT_EQ(m->quarantined_slots(), 0u);
  EXPECT_EQ(m->quarantined_kv_tokens(), 0u);
  expect_pools_conserved();
}

TEST_F(quarantine, OverlapHoldsUntilTheAlreadyScheduledBatchEnded) {
  // Batch 1 ended, batch 2 (which still carries the request) is in flight when its
  // results of batch 1 finish it: the ids wait for the end of batch 2, not of batch 1.
  admit(1);
  m->stream_claimed(1);
  m->stream_ended(1);
  m->stream_claimed(2);
  const std::size_t slots = cache.slots().available();
  ASSERT_TRUE(m->abort(1).ok());
  m->stream_ended(1);  // a repeated or late report changes nothing
  EXPECT_EQ(cache.slots().available(), slots);
  m->stream_ended(2);
  EXPECT_EQ(cache.slots().available(), slots + 3);
  expect_pools_conserved();
}

TEST_F(quarantine, ReleaseQuarantineFreesEverythingWhenTheSessionCloses) {
  admit(1);
  admit(2);
  m->stream_claimed(5);
  const std::size_t slots = cache.slots().available();
  ASSERT_TRUE(m->abort(1).ok());
  ASSERT_TRUE(m->abort(2).ok());
  EXPECT_EQ(m->quarantined_slots(), 6u);
  m->release_quarantine();
  EXPECT_EQ(cache.slots().available(), slots + 6);
  EXPECT_EQ(m->quarantined_slots(), 0u);
  expect_pools_conserved();
}

}  // namespace
}  // namespace hc::test
