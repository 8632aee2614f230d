// spec/cache-semantics.md §4.4: the three worked lifecycles, slot ids and free-list order
// included. Setup: empty tree, page 1, C 64, interval 256, slots [1..10]; one request,
// 200-token prompt, no prefix hit, 99 decode steps (kv_committed_len 299).
//
// Groups: A. extra_buffer (eager, pp 2)  B. extra_buffer_lazy  C. no_buffer
#include <gtest/gtest.h>

#include <algorithm>

#include "actors/scheduler/request_manager.hpp"
#include "tests/support/tree_fixture.hpp"

namespace hc::test {
namespace {

struct lifecycle : ::testing::Test {
  radix_cache cache{{4096, 1, 10, 64}};
  std::unique_ptr<request_manager> m;
  const request_handle h = 7;
  bool check_pools = true;  // off where a test takes slots behind the manager's back

  void start(strategy s, int pp, bool force_fail = false) {
    request_config rc;
    rc.strat = s;
    rc.pp_size = pp;
    rc.chunk_size = 64;
    rc.track_interval = 256;
    rc.rows = 4;
    rc.force_lazy_prealloc_failure = force_fail;
    m = std::make_unique<request_manager>(rc, cache);
    ASSERT_TRUE(m->create(h, 0, iota_tokens(1000, 200)).ok());
    auto mi = m->match(h);
    ASSERT_TRUE(mi.ok());
    EXPECT_EQ(mi->prefix_len, 0u);
    ASSERT_TRUE(m->lock(h).ok());
    ASSERT_TRUE(m->alloc_req(h).ok());
    ASSERT_TRUE(m->alloc_kv(h, 0, 200).ok());
  }
  // Decode steps from length 201 to `to`; `finish_at_last` marks the last step finished.
  void decode_to(std::size_t to, bool finish_at_last = false) {
    const request_record* r = m->find(h);
    for (std::size_t len = r->kv_allocated() + 1; len <= to; ++len) {
      ASSERT_TRUE(m->alloc_kv(h, len - 1, 1).ok());
      ASSERT_TRUE(m->prepare_decode(h).ok());
      ASSERT_TRUE(m->process_decode(h, finish_at_last && len == to).ok());
      if (check_pools) {
        auto s = m->check_pool_invariants();
        ASSERT_TRUE(s.ok()) << s.err().message;
      }
    }
  }
  void finish() {
    ASSERT_TRUE(m->append_tokens(h, iota_tokens(5000, 99)).ok());
    auto f = m->finish(h);
    ASSERT_TRUE(f.ok()) << f.err().message;
  }
  std::vector<std::pair<std::size_t, slot_id>> tree_states() {
    std::vector<std::pair<std::size_t, slot_id>> out;
    std::vector<token_id> all = cat(iota_tokens(1000, 200), iota_tokens(5000, 99));
    for (std::size_t len : {192u, 200u, 256u, 299u}) {
      auto mr = cache.tree().match(0, std::span<const token_id>(all.data(), len));
      if (mr.indices.size() == len && mr.last_slot != no_slot) out.emplace_back(len, mr.last_slot);
    }
    return out;
  }
};

using states = std::vector<std::pair<std::size_t, slot_id>>;

// ---- A ---------------------------------------------------------------------------------
TEST_F(lifecycle, ExtraBufferEagerOverlap) {
  start(strategy::extra_buffer, 2);
  const request_record* r = m->find(h);
  EXPECT_EQ(r->working, 1);
  EXPECT_EQ(r->pingpong, (std::array<slot_id, 2>{2, 3}));
  auto ex = m->prepare_extend(h, 0, 200);
  ASSERT_TRUE(ex.ok());
  EXPECT_TRUE(ex->plan.mask);
  EXPECT_EQ(ex->track_slot, 2);
  EXPECT_EQ(ex->plan.tracked_len, 192u);
  EXPECT_EQ(r->next_track_idx, 1);
  const request_handle batch[] = {h};
  auto ops = m->take_forward_ops(batch);
  EXPECT_EQ(ops.clears, (std::vector<slot_id>{1}));
  auto u = m->cache_unfinished(h, 200);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->protected_len, 192u);
  EXPECT_EQ(u->node_slot, 2);
  EXPECT_EQ(r->pingpong, (std::array<slot_id, 2>{4, 3}));
  EXPECT_EQ(cache.tree().sizes().full_protected, 192u);
  EXPECT_FALSE(r->tracked_len.has_value());
  decode_to(255);
  {
    ASSERT_TRUE(m->alloc_kv(h, 255, 1).ok());
    auto d = m->prepare_decode(h);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d->mask);
    EXPECT_EQ(d->track_slot, 3);
    ASSERT_TRUE(m->process_decode(h, false).ok());
    EXPECT_EQ(r->tracked_len, 256u);
    EXPECT_EQ(r->next_track_idx, 0);
  }
  decode_to(299);
  finish();
  EXPECT_EQ(tree_states(), (states{{192, 2}, {256, 3}}));
  EXPECT_EQ(drain_free_slots(cache), (std::vector<slot_id>{5, 6, 7, 8, 9, 10, 1, 4}));
}

// Speculative decoding (§4.4 "Spec decode"): a step's accepted drafts may carry the
// request across a multiple of the interval without landing on it; the boundary is still
// tracked (cur = seqlen - 1, prev = cur - accepted - 1, tracked at cur // I * I) and the
// ping-pong flips, so the state the verify step wrote at 256 is what finish inserts.
TEST_F(lifecycle, ExtraBufferSpecDecodeTracksABoundaryItsDraftsCross) {
  start(strategy::extra_buffer, 2);
  const request_record* r = m->find(h);
  ASSERT_TRUE(m->prepare_extend(h, 0, 200).ok());
  ASSERT_TRUE(m->cache_unfinished(h, 200).ok());
  EXPECT_EQ(r->next_track_idx, 1);
  decode_to(254);
  // 254 -> 258: three drafts accepted plus the bonus token; 256 lies inside the step.
  ASSERT_TRUE(m->alloc_kv(h, 254, 4).ok());
  auto d = m->prepare_decode(h);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->track_slot, 3) << "where the verify step writes a boundary's state";
  ASSERT_TRUE(m->process_spec_decode(h, 3, false).ok());
  EXPECT_EQ(r->tracked_len, 256u);
  EXPECT_EQ(r->next_track_idx, 0) << "flipped, as at a decode boundary";
  // 258 -> 261 with two drafts: no multiple of 256 crossed, nothing changes.
  ASSERT_TRUE(m->alloc_kv(h, 258, 3).ok());
  ASSERT_TRUE(m->prepare_decode(h).ok());
  ASSERT_TRUE(m->process_spec_decode(h, 2, false).ok());
  EXPECT_EQ(r->tracked_len, 256u);
  EXPECT_EQ(r->next_track_idx, 0);
  decode_to(299);
  finish();
  EXPECT_EQ(tree_states(), (states{{192, 2}, {256, 3}}));
  auto inv = m->check_pool_invariants();
  EXPECT_TRUE(inv.ok()) << inv.err().message;
}

// The strategies SGLang runs no tree with under speculative decoding refuse accepted
// drafts, saying so, and change nothing; a plain decode result still goes through.
void expect_spec_decode_refused(request_manager& m, request_handle h, const char* strategy) {
  ASSERT_TRUE(m.alloc_kv(h, 200, 4).ok());
  ASSERT_TRUE(m.prepare_decode(h).ok());
  auto st = m.process_spec_decode(h, 3, false);
  ASSERT_FALSE(st.ok()) << strategy;
  EXPECT_EQ(st.err().code, errc::invalid_argument);
  EXPECT_NE(st.err().message.find(strategy), std::string::npos) << st.err().message;
  EXPECT_NE(st.err().message.find("needs the extra_buffer strategy"), std::string::npos);
  EXPECT_TRUE(m.process_decode(h, false).ok()) << strategy;
  auto inv = m.check_pool_invariants();
  EXPECT_TRUE(inv.ok()) << inv.err().message;
}

TEST_F(lifecycle, SpecDecodeIsRefusedUnderExtraBufferLazy) {
  start(strategy::extra_buffer_lazy, 2);
  expect_spec_decode_refused(*m, h, "extra_buffer_lazy");
}

TEST_F(lifecycle, SpecDecodeIsRefusedUnderNoBuffer) {
  start(strategy::no_buffer, 1);
  expect_spec_decode_refused(*m, h, "no_buffer");
}

// ---- B ---------------------------------------------------------------------------------
TEST_F(lifecycle, ExtraBufferLazy) {
  start(strategy::extra_buffer_lazy, 2);
  const request_record* r = m->find(h);
  EXPECT_EQ(r->working, 1);
  EXPECT_EQ(r->pingpong, (std::array<slot_id, 2>{2, no_slot}));
  auto ex = m->prepare_extend(h, 0, 200);
  ASSERT_TRUE(ex.ok());
  EXPECT_EQ(ex->track_slot, 2);
  EXPECT_EQ(r->next_track_idx, 0) << "lazy never flips at prefill";
  ASSERT_TRUE(m->cache_unfinished(h, 200).ok());
  EXPECT_EQ(r->pingpong, (std::array<slot_id, 2>{3, no_slot}));
  decode_to(255);
  ASSERT_TRUE(m->alloc_kv(h, 255, 1).ok());
  auto d = m->prepare_decode(h);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(r->pingpong, (std::array<slot_id, 2>{3, 4}));
  EXPECT_EQ(d->track_slot, 4);
  ASSERT_TRUE(m->process_decode(h, false).ok());
  EXPECT_EQ(r->pingpong, (std::array<slot_id, 2>{no_slot, 4}));
  decode_to(299);
  finish();
  EXPECT_EQ(tree_states(), (states{{192, 2}, {256, 4}}));
  EXPECT_EQ(drain_free_slots(cache), (std::vector<slot_id>{5, 6, 7, 8, 9, 10, 3, 1}));
}

TEST_F(lifecycle, ExtraBufferLazyFailedPreallocStillInsertsAtFinish) {
  start(strategy::extra_buffer_lazy, 2, /*force_fail=*/true);
  const request_record* r = m->find(h);
  ASSERT_TRUE(m->prepare_extend(h, 0, 200).ok());
  ASSERT_TRUE(m->cache_unfinished(h, 200).ok());
  decode_to(256);
  EXPECT_EQ(r->pingpong, (std::array<slot_id, 2>{3, no_slot})) << "prealloc failed: one slot";
  EXPECT_EQ(r->next_track_idx, 0);
  EXPECT_EQ(r->tracked_len, 256u);
  decode_to(299);
  finish();
  EXPECT_EQ(tree_states(), (states{{192, 2}, {256, 3}}));
}

TEST_F(lifecycle, ExtraBufferLazyFinishingAtAFailedBoundarySkipsInsert) {
  start(strategy::extra_buffer_lazy, 2, /*force_fail=*/true);
  ASSERT_TRUE(m->prepare_extend(h, 0, 200).ok());
  ASSERT_TRUE(m->cache_unfinished(h, 200).ok());
  decode_to(256, /*finish_at_last=*/true);
  EXPECT_FALSE(m->find(h)->lazy_is_insert);
  ASSERT_TRUE(m->append_tokens(h, iota_tokens(5000, 57)).ok());
  ASSERT_TRUE(m->finish(h).ok());
  EXPECT_EQ(tree_states(), (states{{192, 2}})) << "nothing inserted at 256";
  EXPECT_EQ(cache.tree().sizes().total_tokens(), 192u);
  EXPECT_EQ(cache.slots().available() + cache.tree().sizes().total_slots(), 10u);
}

TEST_F(lifecycle, ExtraBufferLazyPreallocEvictsOneSlotAndRetries) {
  start(strategy::extra_buffer_lazy, 2);
  ASSERT_TRUE(m->prepare_extend(h, 0, 200).ok());
  ASSERT_TRUE(m->cache_unfinished(h, 200).ok());
  // Fill the pool except nothing: the tree holds slot 2 (locked by the request). Add an
  // unlocked tree slot, then exhaust the free list so the prealloc must evict it.
  std::vector<kv_index> kv = alloc_kv(cache, 64);
  const slot_id extra_slot = cache.slots().alloc_one();
  ASSERT_TRUE(cache.tree().insert(0, iota_tokens(90000, 64), kv, extra_slot).ok());
  std::vector<slot_id> hog;
  check_pools = false;
  ASSERT_TRUE(cache.slots().alloc(cache.slots().available(), hog));
  decode_to(256);
  const request_record* r = m->find(h);
  EXPECT_EQ(r->pingpong[0], no_slot) << "second slot obtained by evicting one tree slot";
  EXPECT_EQ(r->pingpong[1], extra_slot);
  EXPECT_TRUE(cache.slots().free(hog).ok());
}

// Overlap scheduling (issue 6, found by hcsim): step k+1 is prepared before the results of
// step k. When step k is the request's last and step k+1 reaches a boundary, step k+1 —
// running while the request finishes — writes its snapshot into a track slot.

/// Steps k (length 511, the last) and k+1 (512, a boundary) prepared, then the results of k.
void overlap_finish_before_boundary(request_manager& m, request_handle h, slot_id* next_track) {
  ASSERT_TRUE(m.alloc_kv(h, 510, 1).ok());
  ASSERT_TRUE(m.prepare_decode(h).ok());
  ASSERT_TRUE(m.alloc_kv(h, 511, 1).ok());
  auto next = m.prepare_decode(h);
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(next->mask);
  *next_track = next->track_slot;
  ASSERT_TRUE(m.process_decode(h, /*finished=*/true).ok());
}

TEST_F(lifecycle, ExtraBufferLazyOverlapFinishInsertsTheSnapshotNotTheNextStepsSlot) {
  start(strategy::extra_buffer_lazy, 2);
  const request_record* r = m->find(h);
  ASSERT_TRUE(m->prepare_extend(h, 0, 200).ok());
  ASSERT_TRUE(m->cache_unfinished(h, 200).ok());
  decode_to(510);
  EXPECT_EQ(r->pingpong, (std::array<slot_id, 2>{no_slot, 4}));
  slot_id next_track = no_slot;
  overlap_finish_before_boundary(*m, h, &next_track);
  EXPECT_EQ(r->pingpong, (std::array<slot_id, 2>{next_track, 4})) << "step k+1 preallocated";
  finish();
  EXPECT_EQ(tree_states(), (states{{192, 2}, {256, 4}}))
      << "the 256 snapshot, not the slot step k+1 is writing";
  const std::vector<slot_id> free = drain_free_slots(cache);
  EXPECT_NE(std::find(free.begin(), free.end(), next_track), free.end());
}

TEST_F(lifecycle, ExtraBufferLazyOverlapFinishSkipsInsertWhenTheNextStepOverwritesIt) {
  start(strategy::extra_buffer_lazy, 2, /*force_fail=*/true);
  ASSERT_TRUE(m->prepare_extend(h, 0, 200).ok());
  ASSERT_TRUE(m->cache_unfinished(h, 200).ok());
  decode_to(510);
  EXPECT_EQ(m->find(h)->tracked_len, 256u);
  slot_id next_track = no_slot;
  overlap_finish_before_boundary(*m, h, &next_track);
  EXPECT_EQ(next_track, 3) << "no prealloc: step k+1 writes the only track slot";
  finish();
  EXPECT_EQ(tree_states(), (states{{192, 2}})) << "slot 3 no longer holds the 256 state";
}

// ---- C ---------------------------------------------------------------------------------
TEST_F(lifecycle, NoBufferWithoutOverlap) {
  start(strategy::no_buffer, 1);
  const request_record* r = m->find(h);
  EXPECT_EQ(r->working, 1);
  EXPECT_FALSE(r->has_pingpong);
  auto u = m->cache_unfinished(h, 200);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->protected_len, 200u);
  EXPECT_EQ(u->node_slot, 2);
  const request_handle batch[] = {h};
  auto ops = m->take_forward_ops(batch);
  EXPECT_EQ(ops.snapshots, (std::vector<slot_copy>{{1, 2}})) << "deferred copy W -> donated";
  EXPECT_EQ(ops.clears, (std::vector<slot_id>{1}));
  decode_to(299);
  finish();
  EXPECT_EQ(tree_states(), (states{{200, 2}, {299, 1}}));
  EXPECT_EQ(drain_free_slots(cache), (std::vector<slot_id>{3, 4, 5, 6, 7, 8, 9, 10}));
}

// fuzz_executor's finding (tests/fuzz/regressions/executor/): a request matched but never
// locked nor admitted holds its prefix's tree ids in its row; an eviction frees them; a
// cache_unfinished then inserted those free ids into the tree. It is refused before
// admission (SGLang calls it for running requests only), and the tree keeps no free id.
TEST(LifecycleGuards, CacheUnfinishedBeforeAdmissionIsRefused) {
  radix_cache cache{{4096, 1, 10, 64}};
  request_config rc;
  rc.strat = strategy::no_buffer;
  rc.pp_size = 1;
  rc.rows = 4;
  request_manager m(rc, cache);
  // One request caches a 40-token prompt, then goes.
  ASSERT_TRUE(m.create(1, 0, iota_tokens(1000, 40)).ok());
  ASSERT_TRUE(m.match(1).ok());
  ASSERT_TRUE(m.lock(1).ok());
  ASSERT_TRUE(m.alloc_req(1).ok());
  ASSERT_TRUE(m.alloc_kv(1, 0, 40).ok());
  ASSERT_TRUE(m.cache_unfinished(1, 40).ok());
  ASSERT_TRUE(m.abort(1).ok());
  // A second one matches it (no lock, no row), and the tree evicts everything.
  ASSERT_TRUE(m.create(2, 0, cat(iota_tokens(1000, 40), iota_tokens(7, 4))).ok());
  auto mi = m.match(2);
  ASSERT_TRUE(mi.ok());
  EXPECT_GT(mi->prefix_len, 0u) << "the prefix is cached";
  (void)cache.tree().evict(SIZE_MAX, 0);
  auto u = m.cache_unfinished(2, mi->prefix_len);
  ASSERT_FALSE(u.ok()) << "a request without a row has no KV of its own to cache";
  EXPECT_EQ(u.err().code, errc::invalid_argument);
  HC_ASSERT_OK(cache.tree().check_invariants());
  ASSERT_TRUE(m.abort(2).ok());
  HC_ASSERT_OK(cache.tree().sanity_check());
}

}  // namespace
}  // namespace hc::test
