// Prefetch reservation and completion (cache-semantics.md §5.4, seed PR 26945): the
// truncation table (host free pages below / equal / above the need, below the threshold,
// unaligned, with and without evictable host leaves, rate-limited), existence answers,
// completion into host-only nodes, and every outcome counter. Each test ends idle: the
// tree passes sanity_check and every host id is free or held by the tree.
#include <gtest/gtest.h>

#include "actors/radix_cache/prefetch_planner.hpp"
#include "tests/support/tree_fixture.hpp"

namespace hc::test {
namespace {

constexpr std::size_t P = 4;
constexpr std::size_t threshold = 32;

struct prefetch : ::testing::Test {
  radix_cache cache{[] {
    cache_config c;
    c.page_size = P;
    c.kv_tokens = 64;
    c.slots = 16;
    c.host_kv_tokens = 128;  // rate limit: 0.8 * (128 - 64) = 51 tokens
    c.host_slots = 8;
    c.host_tier.write_through_threshold = 1u << 30;
    return c;
  }()};
  radix_tree& t = cache.tree();
  prefetch_planner planner{prefetch_config{threshold}, t, cache.host_kv(), cache.host_slots(), 64};
  std::vector<kv_index> held;  // host ids taken by "other work"

  void hold_host_until_free(std::size_t free_tokens) {
    ASSERT_TRUE(
        cache.host_kv().alloc_extend(0, 0, cache.host_kv().available() - free_tokens, held));
  }
  void TearDown() override {
    if (!held.empty()) {
      EXPECT_TRUE(cache.host_kv().free(held).ok());
    }
    auto s = t.sanity_check();
    EXPECT_TRUE(s.ok()) << s.err().message;
    EXPECT_EQ(cache.host_kv().available() + t.host_usage().tokens, cache.host_kv().capacity());
    EXPECT_EQ(cache.host_slots().available() + t.host_usage().slots, cache.host_slots().capacity());
    EXPECT_EQ(planner.occupied_tokens(), 0u);
  }
  std::uint64_t outcome(prefetch_outcome o) const {
    return planner.outcomes()[static_cast<std::size_t>(o)];
  }
  prefetch_ticket begin_ok(std::size_t tokens, int first = 1) {
    auto r = planner.begin(t.root(), iota_tokens(first, tokens));
    EXPECT_TRUE(std::holds_alternative<prefetch_ticket>(r))
        << (std::holds_alternative<prefetch_outcome>(r) ? to_string(std::get<prefetch_outcome>(r))
                                                        : "");
    return std::holds_alternative<prefetch_ticket>(r) ? std::get<prefetch_ticket>(std::move(r))
                                                      : prefetch_ticket{};
  }
  /// A host-only leaf of `tokens` tokens (backed up, then demoted).
  void make_host_leaf(int first, std::size_t tokens) {
    auto key = iota_tokens(first, tokens);
    auto kv = alloc_kv(cache, tokens);
    ASSERT_TRUE(t.insert(0, key, kv, cache.slots().alloc_one()).ok());
    node_ref n = t.match(0, key).best;
    ASSERT_TRUE(t.write_backup(n).ok());
    ASSERT_TRUE(t.backup_done(n).ok());
    (void)t.evict(tokens, 0);
    ASSERT_TRUE(n.node->evicted());
  }
};

TEST_F(prefetch, HostFreeAboveTheNeedReservesEverything) {
  prefetch_ticket tk = begin_ok(40);
  EXPECT_EQ(tk.tokens.size(), 40u);
  EXPECT_EQ(tk.host_kv.size(), 40u);
  EXPECT_NE(tk.host_slot, no_slot);
  EXPECT_FALSE(tk.truncated);
  EXPECT_EQ(planner.occupied_tokens(), 40u);
  auto r = planner.finish(tk, 0, 40, true, false);
  EXPECT_EQ(r.outcome, prefetch_outcome::completed);
  EXPECT_EQ(r.storage_hit_tokens, 40u);
  auto m = t.match(0, iota_tokens(1, 40));
  EXPECT_EQ(m.host_hit_length, 40u);
  EXPECT_TRUE(m.mamba_host_hit) << "the state was read: the new leaf holds the host slot";
  EXPECT_TRUE(m.indices.empty());
  EXPECT_EQ(outcome(prefetch_outcome::completed), 1u);
}

TEST_F(prefetch, HostFreeEqualToTheNeedReservesEverything) {
  hold_host_until_free(40);
  prefetch_ticket tk = begin_ok(40);
  EXPECT_FALSE(tk.truncated);
  EXPECT_EQ(cache.host_kv().available(), 0u);
  planner.abort(tk);
  EXPECT_EQ(outcome(prefetch_outcome::aborted), 1u);
}

TEST_F(prefetch, HostFreeBelowTheNeedTruncatesToWhatFits) {
  hold_host_until_free(36);
  prefetch_ticket tk = begin_ok(48);
  EXPECT_TRUE(tk.truncated);
  EXPECT_EQ(tk.tokens.size(), 36u) << "page-aligned free host size";
  EXPECT_EQ(tk.requested, 48u);
  auto r = planner.finish(tk, 0, 36, true, false);
  EXPECT_EQ(r.outcome, prefetch_outcome::truncated);
  EXPECT_EQ(r.storage_hit_tokens, 36u);
}

TEST_F(prefetch, TruncationBelowTheThresholdSkips) {
  hold_host_until_free(28);
  auto r = planner.begin(t.root(), iota_tokens(1, 48));
  ASSERT_TRUE(std::holds_alternative<prefetch_outcome>(r));
  EXPECT_EQ(std::get<prefetch_outcome>(r), prefetch_outcome::skipped_below_threshold);
  EXPECT_EQ(cache.host_kv().available(), 28u) << "nothing kept";
  EXPECT_EQ(cache.host_slots().available(), cache.host_slots().capacity());
}

TEST_F(prefetch, ARequestBelowTheThresholdSkips) {
  auto r = planner.begin(t.root(), iota_tokens(1, threshold - 1));
  EXPECT_EQ(std::get<prefetch_outcome>(r), prefetch_outcome::skipped_below_threshold);
  EXPECT_EQ(outcome(prefetch_outcome::skipped_below_threshold), 1u);
}

TEST_F(prefetch, UnalignedRequestsArePageFloored) {
  prefetch_ticket tk = begin_ok(43);
  EXPECT_EQ(tk.tokens.size(), 40u);
  EXPECT_EQ(tk.requested, 40u);
  planner.abort(tk);
}

TEST_F(prefetch, EvictableHostLeavesMakeRoomBeforeTruncating) {
  make_host_leaf(1000, 32);
  make_host_leaf(2000, 32);
  hold_host_until_free(8);  // 64 of the host is held by the two host leaves
  prefetch_ticket tk = begin_ok(48);
  EXPECT_FALSE(tk.truncated) << "host leaves were evicted instead";
  EXPECT_EQ(tk.tokens.size(), 48u);
  EXPECT_LT(t.host_usage().tokens, 64u);
  (void)planner.finish(tk, 0, 48, true, false);
}

TEST_F(prefetch, TooMuchInFlightIsRateLimited) {
  prefetch_ticket a = begin_ok(48);       // occupied 48 < 51
  prefetch_ticket b = begin_ok(32, 500);  // occupied 80
  auto r = planner.begin(t.root(), iota_tokens(900, 32));
  EXPECT_EQ(std::get<prefetch_outcome>(r), prefetch_outcome::rate_limited);
  EXPECT_EQ(planner.capacity_limit(), 51u);
  planner.abort(a);
  planner.abort(b);
  EXPECT_EQ(outcome(prefetch_outcome::rate_limited), 1u);
}

TEST_F(prefetch, ASmallStoreHitRevokes) {
  prefetch_ticket tk = begin_ok(48);
  auto o = planner.on_exists(tk, threshold - P);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(*o, prefetch_outcome::revoked);
  EXPECT_EQ(cache.host_kv().available(), cache.host_kv().capacity());
}

TEST_F(prefetch, TheStoreHitShrinksTheReservation) {
  prefetch_ticket tk = begin_ok(48);
  EXPECT_FALSE(planner.on_exists(tk, 37).has_value());
  EXPECT_EQ(tk.tokens.size(), 36u) << "page-floored hit";
  EXPECT_EQ(cache.host_kv().available(), 128u - 36u);
  auto r = planner.finish(tk, 0, 36, true, false);
  EXPECT_EQ(r.outcome, prefetch_outcome::completed);
}

TEST_F(prefetch, AFailedReadKeepsThePagesBeforeItWithoutTheState) {
  prefetch_ticket tk = begin_ok(48);
  auto r = planner.finish(tk, 0, 40, /*state_read=*/false, false);
  EXPECT_EQ(r.outcome, prefetch_outcome::partial);
  EXPECT_EQ(r.storage_hit_tokens, 40u);
  auto m = t.match(0, iota_tokens(1, 48));
  EXPECT_EQ(m.host_hit_length, 0u) << "no state: the pages are there but nothing resumes";
  EXPECT_EQ(t.host_usage().tokens, 40u);
  EXPECT_EQ(t.host_usage().slots, 0u) << "the reserved slot was freed";
  (void)t.evict_host(40);
}

TEST_F(prefetch, ThePartAlreadyInTheTreeIsNotDuplicated) {
  make_host_leaf(1, 16);
  prefetch_ticket tk = begin_ok(48);
  auto r = planner.finish(tk, 0, 48, true, false);
  EXPECT_EQ(r.storage_hit_tokens, 32u);
  EXPECT_EQ(t.host_usage().tokens, 48u) << "16 tokens were already on the host";
  auto m = t.match(0, iota_tokens(1, 48));
  EXPECT_EQ(m.host_hit_length, 48u);
}

TEST_F(prefetch, TimedOutPrefetchesKeepWhatArrived) {
  prefetch_ticket tk = begin_ok(48);
  auto r = planner.finish(tk, 0, 20, false, /*timed_out=*/true);
  EXPECT_EQ(r.outcome, prefetch_outcome::timed_out);
  EXPECT_EQ(r.storage_hit_tokens, 20u);
  (void)t.evict_host(20);
}

TEST_F(prefetch, TheAnchorIsProtectedWhileInFlight) {
  make_host_leaf(1, 16);
  node_ref anchor = t.match(0, iota_tokens(1, 16)).best;
  auto r = planner.begin(anchor, iota_tokens(100, 40));
  ASSERT_TRUE(std::holds_alternative<prefetch_ticket>(r));
  auto tk = std::get<prefetch_ticket>(std::move(r));
  EXPECT_EQ(t.evict_host(1000), 0u) << "the protected anchor is not an H-leaf";
  auto done = planner.finish(tk, 0, 40, true, false);
  EXPECT_EQ(done.storage_hit_tokens, 40u);
  auto m = t.match(0, cat(iota_tokens(1, 16), iota_tokens(100, 40)));
  EXPECT_EQ(m.host_hit_length, 56u);
  EXPECT_EQ(t.evict_host(1000), 56u) << "released at the end";
}

TEST(PrefetchTimeout, FollowsBasePlusPerKiTokenCappedAtMax) {
  prefetch_config c;
  EXPECT_DOUBLE_EQ(prefetch_timeout_s(c, 0), 2.0);
  EXPECT_DOUBLE_EQ(prefetch_timeout_s(c, 10240), 3.0);
  EXPECT_DOUBLE_EQ(prefetch_timeout_s(c, 10'000'000), 30.0);
  EXPECT_EQ(to_string(prefetch_outcome::skipped_below_threshold), "skipped_below_threshold");
}

}  // namespace
}  // namespace hc::test
