// Overlap scheduling with several sessions on one instance (issue 6): a session caches a
// chunk while the forward that writes it is still running. The nodes that adopted its ids
// carry a writer mark; another session that reaches them (prefix match, dedup of its own
// insert) is told to wait for that forward; the nodes stay locked (not evicted, their ids
// not recycled) until it ended; and the duplicates an insert drops are quarantined like
// any id the session frees while its forward runs.
#include <gtest/gtest.h>

#include <memory>

#include "actors/radix_cache/write_fences.hpp"
#include "actors/scheduler/request_manager.hpp"
#include "tests/support/tree_fixture.hpp"

namespace hc::test {
namespace {

TEST(write_fences, ABatchWritesFromItsClaimUntilItsEnd) {
  write_fences f;
  EXPECT_FALSE(f.in_flight(1).has_value());
  f.claimed(1, 3);
  ASSERT_TRUE(f.in_flight(1).has_value());
  EXPECT_EQ(*f.in_flight(1), (writer_mark{1, 3}));
  EXPECT_TRUE(f.writing({1, 3}));
  EXPECT_FALSE(f.writing({2, 3})) << "an unknown session writes nothing";
  f.ended(1, 2);
  EXPECT_TRUE(f.writing({1, 3}));
  f.ended(1, 3);
  EXPECT_FALSE(f.writing({1, 3}));
  EXPECT_FALSE(f.in_flight(1).has_value());
  f.claimed(1, 4);
  EXPECT_TRUE(f.writing({1, 4}));
  f.closed(1);
  EXPECT_FALSE(f.writing({1, 4})) << "a closed session writes nothing";
}

TEST(write_fences, AddMarkKeepsTheLatestBatchPerSessionAndDropsEndedOnes) {
  write_fences f;
  f.claimed(1, 5);
  f.claimed(2, 7);
  std::vector<writer_mark> marks;
  f.add_mark(marks, {1, 4});
  f.add_mark(marks, {1, 5});
  f.add_mark(marks, {2, 7});
  EXPECT_EQ(marks, (std::vector<writer_mark>{{1, 5}, {2, 7}}));
  f.ended(1, 5);
  f.claimed(3, 1);
  f.add_mark(marks, {3, 1});
  EXPECT_EQ(marks, (std::vector<writer_mark>{{2, 7}, {3, 1}}));
}

/// Two sessions (1 and 2) of a no_buffer instance sharing one cache.
struct two_sessions : ::testing::Test {
  radix_cache cache{{1024, 1, 16, 64}};
  std::unique_ptr<request_manager> a, b;  // sessions 1 and 2

  void SetUp() override {
    request_config rc;
    rc.strat = strategy::no_buffer;
    rc.chunk_size = 64;
    rc.rows = 4;
    rc.session = 1;
    a = std::make_unique<request_manager>(rc, cache);
    rc.session = 2;
    b = std::make_unique<request_manager>(rc, cache);
  }
  /// Admits request h of `m` (a 300-token prompt from token 0) with `n` tokens of KV.
  static void admit(request_manager& m, request_handle h, std::size_t n) {
    ASSERT_TRUE(m.create(h, 0, iota_tokens(0, 300)).ok());
    ASSERT_TRUE(m.match(h).ok());
    ASSERT_TRUE(m.lock(h).ok());
    ASSERT_TRUE(m.alloc_req(h).ok());
    ASSERT_TRUE(m.alloc_kv(h, 0, n).ok());
  }
  /// Session 1 caches its first chunk (128 tokens) while batch 1, which writes it, runs.
  void cache_chunk_in_flight() {
    admit(*a, 1, 128);
    a->stream_claimed(1);
    auto u = a->cache_unfinished(1, 128);
    ASSERT_TRUE(u.ok()) << u.err().message;
    ASSERT_TRUE(u->inserted);
  }
  void expect_tree_ok() {
    status s = cache.tree().check_invariants();
    EXPECT_TRUE(s.ok()) << s.err().message;
  }
};

TEST_F(two_sessions, AChunkCachedWhileItsForwardRunsIsMarkedAndLocked) {
  cache_chunk_in_flight();
  EXPECT_EQ(a->write_locks(), 1u);
  match_result m = cache.tree().match(0, iota_tokens(0, 128));
  ASSERT_EQ(m.indices.size(), 128u);
  EXPECT_EQ(m.last_node.node->writers, (std::vector<writer_mark>{{1, 1}}));
  EXPECT_TRUE(a->take_read_waits().empty()) << "a session's own reads are ordered by its fence";
  a->stream_ended(1);
  EXPECT_EQ(a->write_locks(), 0u);
  expect_tree_ok();
}

TEST_F(two_sessions, WithoutAForwardInFlightNothingIsMarked) {
  admit(*a, 1, 128);
  a->stream_claimed(1);
  a->stream_ended(1);
  ASSERT_TRUE(a->cache_unfinished(1, 128).ok());
  EXPECT_EQ(a->write_locks(), 0u);
  match_result m = cache.tree().match(0, iota_tokens(0, 128));
  EXPECT_TRUE(m.last_node.node->writers.empty());
}

TEST_F(two_sessions, AnotherSessionsMatchWaitsForTheWriter) {
  cache_chunk_in_flight();
  ASSERT_TRUE(b->create(7, 0, iota_tokens(0, 300)).ok());
  auto m = b->match(7);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->prefix_len, 128u);
  EXPECT_EQ(b->take_read_waits(), (std::vector<writer_mark>{{1, 1}}));
  EXPECT_TRUE(b->take_read_waits().empty()) << "taken once";
  a->stream_ended(1);
  ASSERT_TRUE(b->create(8, 0, iota_tokens(0, 300)).ok());
  ASSERT_TRUE(b->match(8).ok());
  EXPECT_TRUE(b->take_read_waits().empty()) << "the writer ended: nothing to wait for";
}

TEST_F(two_sessions, AClosedWriterIsNotWaitedFor) {
  cache_chunk_in_flight();
  ASSERT_TRUE(a->abort(1).ok());
  a->release_quarantine();  // the session closes
  EXPECT_EQ(a->write_locks(), 0u);
  ASSERT_TRUE(b->create(7, 0, iota_tokens(0, 300)).ok());
  ASSERT_TRUE(b->match(7).ok());
  EXPECT_TRUE(b->take_read_waits().empty());
  expect_tree_ok();
}

TEST_F(two_sessions, DedupOntoInFlightNodesWaitsAndQuarantinesTheDuplicates) {
  admit(*b, 7, 128);        // session 2 computes the same chunk itself...
  cache_chunk_in_flight();  // ...but session 1 caches it first, its forward still running
  b->stream_claimed(1);     // session 2's forward of that chunk runs too
  const std::size_t kv = cache.kv().available();
  auto u = b->cache_unfinished(7, 128);
  ASSERT_TRUE(u.ok()) << u.err().message;
  EXPECT_EQ(b->take_read_waits(), (std::vector<writer_mark>{{1, 1}}))
      << "its row now points at session 1's ids, still being written";
  EXPECT_EQ(cache.kv().available(), kv) << "its own copies are still being written";
  EXPECT_EQ(b->quarantined_kv_tokens(), 128u);
  b->stream_ended(1);
  EXPECT_EQ(cache.kv().available(), kv + 128);
  EXPECT_EQ(b->quarantined_kv_tokens(), 0u);
  expect_tree_ok();
}

TEST_F(two_sessions, AMarkedNodeIsNotEvictedBeforeItsWriterEnded) {
  cache_chunk_in_flight();
  ASSERT_TRUE(a->abort(1).ok());  // the request goes; its forward still writes the chunk
  const std::size_t kv = cache.kv().available();
  (void)cache.tree().evict(1024, 16);
  EXPECT_EQ(cache.kv().available(), kv) << "evicted ids could be given out under the writes";
  a->stream_ended(1);
  (void)cache.tree().evict(1024, 16);
  EXPECT_GE(cache.kv().available(), kv + 128);
  expect_tree_ok();
}

TEST_F(two_sessions, ASplitKeepsTheMarkOnBothHalves) {
  cache_chunk_in_flight();
  match_result m = cache.tree().match(0, iota_tokens(0, 64));  // splits the 128-token node
  ASSERT_EQ(m.kv_matched, 64u);
  match_result whole = cache.tree().match(0, iota_tokens(0, 128));
  const radix_node* lower = whole.last_node.node;
  ASSERT_NE(lower->parent, nullptr);
  EXPECT_EQ(lower->key.size(), 64u);
  EXPECT_EQ(lower->writers, (std::vector<writer_mark>{{1, 1}}));
  EXPECT_EQ(lower->parent->writers, (std::vector<writer_mark>{{1, 1}}));
  a->stream_ended(1);
  expect_tree_ok();
}

}  // namespace
}  // namespace hc::test
