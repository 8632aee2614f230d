// radix_tree::demote_prefix (cmd::demote): a prompt's cached path taken off the device on
// request — evicted without a host tier, demoted with one (after a backup if it had none)
// — deepest first, keeping what a lock holds or another device branch extends. Every
// test ends with the tree's invariants and the pools' accounting checked.
#include <gtest/gtest.h>

#include "actors/radix_cache/radix_cache.hpp"
#include "tests/support/tree_fixture.hpp"

namespace hc::test {
namespace {

cache_config config(bool host, write_policy policy = write_policy::write_through) {
  cache_config c;
  c.kv_tokens = 128;
  c.slots = 8;
  if (host) {
    c.host_kv_tokens = 512;
    c.host_slots = 16;
    c.host_tier.policy = policy;
  }
  return c;
}

struct Demote : ::testing::Test {
  std::vector<token_id> A = iota_tokens(10, 16), AB = cat(A, iota_tokens(100, 16)),
                        AC = cat(A, iota_tokens(200, 16));

  /// Inserts A, then the listed extensions of A, each node with a device state.
  static void build(radix_cache& c, const std::vector<std::vector<token_id>>& leaves,
                    const std::vector<token_id>& a) {
    std::vector<kv_index> kv = alloc_kv(c, a.size());
    ASSERT_TRUE(c.tree().insert(0, a, kv, c.slots().alloc_one()).ok());
    for (const auto& key : leaves) {
      std::vector<kv_index> ids = kv;
      std::vector<kv_index> more = alloc_kv(c, key.size() - a.size());
      ids.insert(ids.end(), more.begin(), more.end());
      ASSERT_TRUE(c.tree().insert(0, key, ids, c.slots().alloc_one(), a.size()).ok());
    }
  }
  /// build(), then drops the write-through backups its inserts queued: as if the pipeline
  /// had not got to them, so no node has a host copy yet.
  static void build_without_backups(radix_cache& c,
                                    const std::vector<std::vector<token_id>>& leaves,
                                    const std::vector<token_id>& a) {
    build(c, leaves, a);
    (void)c.tree().take_backup_candidates();
  }
  /// Backs `key`'s node up (the copy itself is the data plane's) and acknowledges it.
  static void back_up(radix_cache& c, const std::vector<token_id>& key) {
    node_ref n = c.tree().match(0, key).last_node;
    auto copy = c.tree().write_backup(n);
    ASSERT_TRUE(copy.ok()) << copy.err().message;
    ASSERT_TRUE(c.tree().backup_done(n).ok());
  }
  static void expect_clean(radix_cache& c) {
    status s = c.tree().sanity_check();
    EXPECT_TRUE(s.ok()) << s.err().message;
    EXPECT_EQ(c.kv().available() + c.tree().sizes().total_tokens(), c.kv().capacity())
        << "every device KV id is either free or the tree's";
    EXPECT_EQ(c.slots().available() + c.tree().sizes().total_slots(), c.slots().capacity());
  }
};

TEST_F(Demote, WithoutAHostTierThePathIsEvictedUpToABranchStillInUse) {
  radix_cache c(config(false));
  build(c, {AB, AC}, A);
  demote_report r = c.tree().demote_prefix(0, AB);
  EXPECT_EQ(r.matched_tokens, 32u);
  EXPECT_EQ(r.evicted_tokens, 16u) << "AB's own node; A goes on with AC";
  EXPECT_EQ(r.slots_freed, 1u);
  EXPECT_EQ(r.kept_tokens, 16u);
  EXPECT_EQ(r.demoted_tokens + r.deferred_tokens, 0u);
  EXPECT_EQ(c.tree().match(0, AC).prefix_len, 32u) << "the other branch is untouched";
  expect_clean(c);

  r = c.tree().demote_prefix(0, AC);
  EXPECT_EQ(r.evicted_tokens, 32u) << "AC, then A: nothing else extends it now";
  EXPECT_EQ(r.slots_freed, 2u);
  EXPECT_EQ(r.kept_tokens, 0u);
  EXPECT_EQ(c.tree().node_count(), 0u);
  EXPECT_EQ(c.tree().counters().evicted_tokens, 48u);
  EXPECT_EQ(c.tree().counters().evicted_slots, 3u);
  expect_clean(c);
}

TEST_F(Demote, ALockedNodeStaysWithEverythingAboveIt) {
  radix_cache c(config(false));
  build(c, {AB}, A);
  const node_ref a = c.tree().match(0, A).last_node;
  ASSERT_TRUE(c.tree().inc_lock(a).ok());  // a request (or a pin) resumes from A
  demote_report r = c.tree().demote_prefix(0, AB);
  EXPECT_EQ(r.evicted_tokens, 16u) << "AB is nobody's";
  EXPECT_EQ(r.kept_tokens, 16u);
  ASSERT_TRUE(c.tree().valid(a));
  ASSERT_TRUE(c.tree().dec_lock(a).ok());

  build(c, {}, iota_tokens(500, 16));
  const node_ref d = c.tree().match(0, iota_tokens(500, 16)).last_node;
  ASSERT_TRUE(c.tree().inc_lock(d).ok());
  r = c.tree().demote_prefix(0, iota_tokens(500, 16));
  EXPECT_EQ(r.evicted_tokens, 0u);
  EXPECT_EQ(r.kept_tokens, 16u) << "locked itself";
  ASSERT_TRUE(c.tree().dec_lock(d).ok());
  expect_clean(c);
}

TEST_F(Demote, ThePromptsLastNodeGoesWholeAndNothingIsSplit) {
  radix_cache c(config(false));
  build(c, {AB}, A);
  const std::size_t nodes = c.tree().node_count();
  const std::vector<token_id> part(AB.begin(), AB.begin() + 24);
  demote_report r = c.tree().demote_prefix(0, part);
  EXPECT_EQ(r.matched_tokens, 24u);
  EXPECT_EQ(r.evicted_tokens, 32u) << "AB's node reaches past the prompt: it goes whole";
  EXPECT_LE(c.tree().node_count(), nodes);
  expect_clean(c);
}

TEST_F(Demote, AnotherNamespaceOrAnUnknownPromptFindsNothing) {
  radix_cache c(config(false));
  build(c, {AB}, A);
  EXPECT_EQ(c.tree().demote_prefix(7, AB).matched_tokens, 0u);
  const demote_report r = c.tree().demote_prefix(0, iota_tokens(900, 40));
  EXPECT_EQ(r.matched_tokens, 0u);
  EXPECT_EQ(r.evicted_tokens + r.kept_tokens, 0u);
  EXPECT_EQ(c.tree().demote_prefix(0, {}).matched_tokens, 0u);
  EXPECT_EQ(c.tree().sizes().total_tokens(), 32u);
  expect_clean(c);
}

TEST_F(Demote, BackedUpNodesAreDemotedAtOnceAndLoadBack) {
  radix_cache c(config(true));
  build_without_backups(c, {AB}, A);
  back_up(c, A);
  back_up(c, AB);
  const demote_report r = c.tree().demote_prefix(0, AB);
  EXPECT_EQ(r.demoted_tokens, 32u);
  EXPECT_EQ(r.slots_freed, 2u);
  EXPECT_EQ(r.evicted_tokens + r.deferred_tokens + r.kept_tokens, 0u);
  EXPECT_EQ(c.tree().counters().demoted_tokens, 32u);
  EXPECT_EQ(c.tree().sizes().total_tokens(), 0u) << "nothing of it left on the device";
  EXPECT_TRUE(c.drain_loads().empty());
  expect_clean(c);

  // Still resumable: the next match loads it back from the host.
  cow_match_result m = c.match(0, cat(AB, toks({1})), /*cow=*/false, false);
  EXPECT_EQ(m.match.indices.size(), 32u);
  EXPECT_EQ(m.loaded_tokens, 32u);
  for (const tier_copy& l : c.drain_loads())
    ASSERT_TRUE(c.load_done(l).ok());
  expect_clean(c);
}

TEST_F(Demote, NodesWithoutABackupAreDemotedWhenTheirBackupsAreDone) {
  for (bool child_first : {true, false}) {
    SCOPED_TRACE(child_first ? "the leaf's backup ends first" : "the parent's ends first");
    radix_cache c(config(true));
    build_without_backups(c, {AB}, A);
    const demote_report r = c.tree().demote_prefix(0, AB);
    EXPECT_EQ(r.deferred_tokens, 32u);
    EXPECT_EQ(r.demoted_tokens + r.evicted_tokens + r.kept_tokens, 0u);
    std::vector<node_ref> queued = c.tree().take_backup_candidates();
    ASSERT_EQ(queued.size(), 2u) << "A first (write-through's contiguity), then AB";
    EXPECT_EQ(queued[0].node->key.size(), 16u);
    for (node_ref n : queued)
      ASSERT_TRUE(c.tree().write_backup(n).ok());
    EXPECT_EQ(c.tree().sizes().total_tokens(), 32u) << "on the device while copies run";
    const node_ref first = child_first ? queued[1] : queued[0];
    const node_ref second = child_first ? queued[0] : queued[1];
    ASSERT_TRUE(c.tree().backup_done(first).ok());
    EXPECT_EQ(c.tree().sizes().total_tokens(), child_first ? 16u : 32u);
    ASSERT_TRUE(c.tree().backup_done(second).ok());
    EXPECT_EQ(c.tree().sizes().total_tokens(), 0u) << "both demoted, deepest first";
    EXPECT_EQ(c.tree().counters().demoted_tokens, 32u);
    EXPECT_TRUE(c.tree().match(0, AB).mamba_host_hit) << "resumable from the host";
    expect_clean(c);
  }
}

TEST_F(Demote, ABackupInFlightIsNoReasonToStayItsNodeGoesWhenTheCopyIsDone) {
  radix_cache c(config(true));
  build_without_backups(c, {AB}, A);
  back_up(c, A);
  const node_ref ab = c.tree().match(0, AB).last_node;
  ASSERT_TRUE(c.tree().write_backup(ab).ok());  // its copy runs: AB's path is locked
  demote_report r = c.tree().demote_prefix(0, AB);
  EXPECT_EQ(r.deferred_tokens, 32u) << "AB when its copy is done, then A";
  EXPECT_EQ(r.demoted_tokens + r.kept_tokens, 0u);
  EXPECT_TRUE(c.tree().take_backup_candidates().empty()) << "both have (or get) their copy";
  ASSERT_TRUE(c.tree().backup_done(ab).ok());
  EXPECT_EQ(c.tree().sizes().total_tokens(), 0u);
  expect_clean(c);

  // A request's lock is a reason: with AB locked by one, nothing is deferred.
  radix_cache d(config(true));
  build_without_backups(d, {AB}, A);
  back_up(d, A);
  const node_ref held = d.tree().match(0, AB).last_node;
  ASSERT_TRUE(d.tree().write_backup(held).ok());
  ASSERT_TRUE(d.tree().inc_lock(held).ok());
  r = d.tree().demote_prefix(0, AB);
  EXPECT_EQ(r.kept_tokens, 32u);
  EXPECT_EQ(r.deferred_tokens, 0u);
  ASSERT_TRUE(d.tree().backup_done(held).ok());
  ASSERT_TRUE(d.tree().dec_lock(held).ok());
  EXPECT_EQ(d.tree().sizes().total_tokens(), 32u);
  expect_clean(d);
}

TEST_F(Demote, UnderWriteBackTheBackupIsLockedUntilItsCopyIsDone) {
  radix_cache c(config(true, write_policy::write_back));
  build(c, {AB}, A);
  const demote_report r = c.tree().demote_prefix(0, AB);
  EXPECT_EQ(r.deferred_tokens, 32u);
  std::vector<node_ref> queued = c.tree().take_backup_candidates();
  ASSERT_EQ(queued.size(), 2u);
  for (node_ref n : queued)
    ASSERT_TRUE(c.tree().write_backup(n).ok());
  // The copies read the device ids: an eviction meanwhile must not free them.
  EXPECT_EQ(c.tree().evict(1000, 1000).tokens_freed_total, 0u);
  EXPECT_TRUE(c.tree().drain_copies().empty()) << "no demotion without its finished copy";
  for (node_ref n : queued)
    ASSERT_TRUE(c.tree().backup_done(n).ok());
  EXPECT_EQ(c.tree().sizes().total_tokens(), 0u);
  expect_clean(c);
}

TEST_F(Demote, AUseBeforeTheBackupIsDoneCancelsTheDemotion) {
  radix_cache c(config(true));
  build_without_backups(c, {AB}, A);
  (void)c.tree().demote_prefix(0, AB);
  std::vector<node_ref> queued = c.tree().take_backup_candidates();
  for (node_ref n : queued)
    ASSERT_TRUE(c.tree().write_backup(n).ok());
  (void)c.tree().match(0, AB);  // a request came back to it
  for (node_ref n : queued)
    ASSERT_TRUE(c.tree().backup_done(n).ok());
  EXPECT_EQ(c.tree().sizes().total_tokens(), 32u) << "backed up, and still on the device";
  EXPECT_EQ(c.tree().counters().demoted_tokens, 0u);
  expect_clean(c);
}

TEST_F(Demote, PagesAreFlooredAndTheSharedAncestorIsBackedUpButStays) {
  cache_config cfg = config(true);
  cfg.page_size = 4;
  radix_cache c(cfg);
  build_without_backups(c, {AB, AC}, A);
  std::vector<token_id> prompt = cat(AB, toks({1, 2, 3}));  // 35 tokens: 32 after the floor
  const demote_report r = c.tree().demote_prefix(0, prompt);
  EXPECT_EQ(r.matched_tokens, 32u);
  EXPECT_EQ(r.kept_tokens, 16u) << "A goes on with AC";
  EXPECT_EQ(r.deferred_tokens, 16u);
  std::vector<node_ref> queued = c.tree().take_backup_candidates();
  ASSERT_EQ(queued.size(), 2u) << "A for contiguity, AB to demote";
  for (node_ref n : queued) {
    ASSERT_TRUE(c.tree().write_backup(n).ok());
    ASSERT_TRUE(c.tree().backup_done(n).ok());
  }
  EXPECT_EQ(c.tree().sizes().total_tokens(), 32u) << "A and AC stay on the device";
  EXPECT_EQ(c.tree().match(0, AC).prefix_len, 32u);
  EXPECT_EQ(c.tree().counters().demoted_tokens, 16u);
  expect_clean(c);
}

}  // namespace
}  // namespace hc::test
