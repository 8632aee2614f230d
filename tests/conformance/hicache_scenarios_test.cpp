// spec/cache-semantics.md §8.2, HiCache part: the FULL+MAMBA HiCache scenarios of
// test_unified_radix_cache_unittest.py (write_through, backups explicit: write-through
// threshold huge, load-back threshold 0), for page sizes 1, 4 and 64. Every scenario ends
// with sanity_check(). Bytes are simulated per id (tier_bytes) so a load-back can be
// checked to restore exactly what was backed up.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "tests/support/tree_fixture.hpp"

namespace hc::test {
namespace {

/// Fake pool contents: one word per KV id and per slot, on each tier. Copies move words.
struct tier_bytes {
  std::map<kv_index, std::uint64_t> device_kv, host_kv;
  std::map<slot_id, std::uint64_t> device_slot, host_slot;
  void apply(const tier_copy& c) {
    const bool d2h = c.dir == tier_copy::direction::device_to_host;
    ASSERT_EQ(c.device_kv.size(), c.host_kv.size());
    for (std::size_t i = 0; i < c.device_kv.size(); ++i) {
      if (d2h)
        host_kv[c.host_kv[i]] = device_kv.at(c.device_kv[i]);
      else
        device_kv[c.device_kv[i]] = host_kv.at(c.host_kv[i]);
    }
    if (c.device_slot != no_slot && c.host_slot != no_slot) {
      if (d2h)
        host_slot[c.host_slot] = device_slot.at(c.device_slot);
      else
        device_slot[c.device_slot] = host_slot.at(c.host_slot);
    }
  }
};

cache_config hicache_config(std::size_t P, write_policy policy) {
  cache_config c;
  c.page_size = P;
  c.kv_tokens = P <= 4 ? 256 : 1024;
  c.slots = P > 1 ? 60 : 20;
  c.chunk_size = std::max<std::size_t>(64, P);
  c.host_kv_tokens = 2 * c.kv_tokens;
  c.host_slots = 2 * c.slots + 1;
  c.host_tier.policy = policy;
  c.host_tier.write_through_threshold = 1u << 30;  // backups are explicit
  c.host_tier.load_back_threshold = 0;
  return c;
}

struct hicache : ::testing::TestWithParam<std::size_t> {
  std::size_t P = GetParam();
  radix_cache cache{hicache_config(P, write_policy::write_through)};
  radix_tree& t = cache.tree();
  tier_bytes bytes;
  std::uint64_t next_word = 1;

  void TearDown() override {
    auto s = t.sanity_check();
    EXPECT_TRUE(s.ok()) << s.err().message;
  }

  std::vector<token_id> seq(int s, std::size_t n) const { return iota_tokens(s, n * P); }

  /// Inserts with fresh device KV and slot, writing a distinct word into each.
  node_ref insert(const std::vector<token_id>& key) {
    auto kv = alloc_kv(cache, key.size());
    for (kv_index k : kv)
      bytes.device_kv[k] = next_word++;
    slot_id s = cache.slots().alloc_one();
    EXPECT_NE(s, no_slot);
    bytes.device_slot[s] = next_word++;
    auto r = t.insert(0, key, kv, s);
    EXPECT_TRUE(r.ok());
    if (r.ok() && r->mamba_exist) {
      EXPECT_TRUE(cache.slots().free_one(s).ok());
    }
    return node_at(key);
  }
  /// The node whose path ends exactly at `key` (via a match that does not split).
  node_ref node_at(const std::vector<token_id>& key) { return t.match(0, key).best; }

  /// write_backup + the copy + the ack.
  void backup(node_ref n) {
    auto c = t.write_backup(n);
    ASSERT_TRUE(c.ok()) << c.err().message;
    bytes.apply(*c);
    HC_ASSERT_OK(t.backup_done(n));
  }
  bool is_d_leaf(const radix_node* n) const {
    return !n->evicted() && n->full_lock_ref == 0 && !n->has_device_child();
  }
  bool is_h_leaf(const radix_node* n) const {
    return n->evicted() && n->backed_up() && n->is_leaf() && !n->host_protected();
  }
  /// base = seq(1,2) and its child base + seq(100,2), both backed up; the child is then
  /// demoted to the host (it is the least recent D-leaf).
  struct chain {
    std::vector<token_id> full;
    node_ref parent, child;
  };
  chain demoted_chain() {
    chain c;
    auto base = seq(1, 2);
    c.full = cat(base, seq(100, 2));
    c.parent = insert(base);
    c.child = insert(c.full);
    backup(c.parent);
    backup(c.child);
    (void)t.evict(2 * P, 0);
    EXPECT_TRUE(c.child.node->evicted());
    return c;
  }
  void mixed_operations(write_policy policy);
  std::vector<const radix_node*> all_nodes() const {
    std::vector<const radix_node*> out,
        stack(t.root().node->children.begin(), t.root().node->children.end());
    while (!stack.empty()) {
      const radix_node* n = stack.back();
      stack.pop_back();
      out.push_back(n);
      stack.insert(stack.end(), n->children.begin(), n->children.end());
    }
    return out;
  }
};

TEST_P(hicache, NodeStatesGoFromDeviceToDeviceAndHost) {
  node_ref n = insert(seq(1, 2));
  EXPECT_FALSE(n.node->backed_up());
  auto c = t.write_backup(n);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(n.node->backed_up());
  EXPECT_TRUE(n.node->backup_in_flight);
  EXPECT_EQ(n.node->full_lock_ref, 1) << "locked until the write ack";
  EXPECT_EQ(c->device_kv, n.node->value.to_vector());
  EXPECT_EQ(c->host_kv, n.node->host_value);
  EXPECT_EQ(c->device_slot, n.node->mamba);
  EXPECT_EQ(c->host_slot, n.node->mamba_host);
  EXPECT_NE(n.node->mamba_host, no_slot);
  HC_ASSERT_OK(t.check_invariants());
  HC_ASSERT_OK(t.backup_done(n));
  EXPECT_EQ(n.node->full_lock_ref, 0);
  EXPECT_FALSE(n.node->evicted());
  EXPECT_EQ(t.host_usage().tokens, 2 * P);
  EXPECT_EQ(t.write_backup(n).err().code, errc::invalid_argument) << "already backed up";
}

TEST_P(hicache, EvictToHostKeepsABackedUpLeafAsAnHLeaf) {
  node_ref n = insert(seq(1, 2));
  backup(n);
  const std::size_t kv_free = cache.kv().available(), slots_free = cache.slots().available();
  auto r = t.evict(2 * P, 0);
  EXPECT_EQ(r.tokens_evicted, 2 * P);
  ASSERT_TRUE(t.valid(n)) << "the node stays, host-only";
  EXPECT_TRUE(n.node->evicted());
  EXPECT_TRUE(n.node->backed_up());
  EXPECT_TRUE(is_h_leaf(n.node));
  EXPECT_FALSE(is_d_leaf(n.node));
  EXPECT_EQ(cache.kv().available(), kv_free + 2 * P);
  EXPECT_EQ(cache.slots().available(), slots_free + 1) << "device slot freed";
  EXPECT_EQ(t.sizes().total_tokens(), 0u);
  EXPECT_EQ(t.host_usage().evicted_nodes, 1u);
}

TEST_P(hicache, EvictToHostUpdatesTheSsmLruLists) {
  node_ref n = insert(seq(1, 2));
  backup(n);
  (void)t.evict(2 * P, 0);
  EXPECT_TRUE(t.lru_order(lru_kind::mamba).empty());
  EXPECT_TRUE(t.lru_order(lru_kind::full).empty());
  ASSERT_EQ(t.lru_order(lru_kind::host_mamba).size(), 1u);
  EXPECT_EQ(t.lru_order(lru_kind::host_mamba)[0], n.node);
}

TEST_P(hicache, MatchWalksThroughEvictedNodes) {
  auto [full, parent, child] = demoted_chain();
  auto m = t.match(0, full);
  EXPECT_GE(m.indices.size(), 2 * P);
  EXPECT_EQ(m.indices.size(), 2 * P);
  EXPECT_EQ(m.best, child);
  EXPECT_EQ(m.last_node, parent);
  EXPECT_EQ(m.host_hit_length, 2 * P);
  EXPECT_EQ(m.last_host_node, child);
  EXPECT_TRUE(m.mamba_host_hit);
}

TEST_P(hicache, PartialMatchSplitsAnEvictedBackedUpNode) {
  node_ref n = insert(seq(1, 2));
  backup(n);
  (void)t.evict(2 * P, 0);
  auto m = t.match(0, cat(seq(1, 1), seq(999, 1)));
  EXPECT_EQ(m.host_hit_length, 0u) << "the split parent has no SSM state";
  EXPECT_EQ(m.last_host_node, t.root());
  EXPECT_EQ(m.best, t.root());
  EXPECT_TRUE(m.indices.empty());
  ASSERT_TRUE(t.valid(n));
  const radix_node* parent = n.node->parent;
  EXPECT_TRUE(parent->evicted());
  EXPECT_EQ(parent->host_value.size(), P);
  EXPECT_EQ(parent->mamba_host, no_slot) << "the host state stays on the child";
  EXPECT_EQ(n.node->host_value.size(), P);
  EXPECT_NE(n.node->mamba_host, no_slot);
}

TEST_P(hicache, DLeavesAndHLeavesAreDisjoint) {
  auto base = seq(1, 2);
  node_ref a = insert(base);
  node_ref b = insert(cat(base, seq(100, 1)));
  node_ref c = insert(cat(base, seq(200, 1)));
  insert(seq(700, 1));
  for (node_ref n : {a, b, c})
    backup(n);
  (void)t.evict(P, 0);
  (void)t.evict(P, 0);
  std::size_t d = 0, h = 0;
  for (const radix_node* n : all_nodes()) {
    EXPECT_FALSE(is_d_leaf(n) && is_h_leaf(n));
    d += is_d_leaf(n);
    h += is_h_leaf(n);
  }
  EXPECT_GE(d, 1u);
  EXPECT_GE(h, 1u);
}

TEST_P(hicache, HostLeafEvictionEmptiesTheTree) {
  auto base = seq(1, 2);
  node_ref a = insert(base);
  node_ref b = insert(cat(base, seq(100, 2)));
  backup(a);
  backup(b);
  (void)t.evict(4 * P, 0);
  ASSERT_TRUE(a.node->evicted() && b.node->evicted());
  const std::size_t slots_held = t.host_usage().slots;
  const std::size_t freed = t.evict_host(4 * P);
  EXPECT_EQ(freed, 4 * P);
  EXPECT_EQ(t.counters().host_evicted_tokens, 4 * P);
  EXPECT_EQ(t.counters().host_evicted_slots, slots_held) << "each host state went with its node";
  EXPECT_EQ(t.node_count(), 0u);
  EXPECT_EQ(cache.host_kv().available(), cache.host_kv().capacity());
  EXPECT_EQ(cache.host_slots().available(), cache.host_slots().capacity());
  EXPECT_EQ(t.host_usage().tokens, 0u);
}

TEST_P(hicache, LoadBackRestoresTheBytesExactly) {
  auto key = seq(1, 3);
  node_ref n = insert(key);
  std::vector<std::uint64_t> kv_words;
  for (kv_index k : n.node->value.to_vector())
    kv_words.push_back(bytes.device_kv.at(k));
  const std::uint64_t state_word = bytes.device_slot.at(n.node->mamba);
  backup(n);
  (void)t.evict(3 * P, 0);
  // Scribble over the freed device ids, as later requests would.
  for (auto& [id, w] : bytes.device_kv)
    w = 0xdead;
  for (auto& [id, w] : bytes.device_slot)
    w = 0xbeef;
  auto m = t.match(0, key);
  ASSERT_EQ(m.best, n);
  auto lb = t.load_back(m.best, 1 << 20);
  ASSERT_TRUE(lb.ok()) << lb.err().message;
  ASSERT_TRUE(lb->loaded);
  for (const tier_copy& c : lb->copies)
    bytes.apply(c);
  ASSERT_EQ(lb->new_indices.size(), 3 * P);
  for (std::size_t i = 0; i < kv_words.size(); ++i)
    EXPECT_EQ(bytes.device_kv.at(lb->new_indices[i]), kv_words[i]) << "token " << i;
  ASSERT_NE(lb->slot, no_slot);
  EXPECT_EQ(bytes.device_slot.at(lb->slot), state_word);
  EXPECT_EQ(lb->last_node, n);
  EXPECT_EQ(n.node->full_lock_ref, 1) << "locked until the load ack";
  HC_ASSERT_OK(t.load_done(n));
  auto again = t.match(0, key);
  EXPECT_EQ(again.indices, lb->new_indices);
  EXPECT_EQ(again.last_slot, lb->slot);
  EXPECT_EQ(again.host_hit_length, 0u);
}

// Issue 6 (hcsim, host tier): a backup's copy may wait for forwards that still write the
// node. Were its device slot evicted meanwhile, the slot could be reused (its new bytes
// copied to the host) or the host state loaded back before the copy ran.
TEST_P(hicache, AQueuedBackupKeepsTheDeviceSlotUntilItsAck) {
  auto key = seq(1, 2);
  node_ref n = insert(key);
  const slot_id slot = n.node->mamba;
  const std::uint64_t state_word = bytes.device_slot.at(slot);
  auto c = t.write_backup(n);
  ASSERT_TRUE(c.ok()) << c.err().message;
  EXPECT_EQ(c->device_slot, slot);
  EXPECT_EQ(t.sizes().mamba_protected, 1u);
  (void)t.evict(0, 20);
  EXPECT_EQ(n.node->mamba, slot) << "the slot the queued copy reads is not evicted";
  bytes.apply(*c);  // the copy runs
  HC_ASSERT_OK(t.backup_done(n));
  EXPECT_EQ(t.sizes().mamba_protected, 0u);
  EXPECT_EQ(t.sizes().mamba_evictable, 1u);
  (void)t.evict(0, 20);
  EXPECT_EQ(n.node->mamba, no_slot) << "evictable again after the ack";
  auto m = t.match(0, key);
  ASSERT_TRUE(m.mamba_host_hit);
  auto lb = t.load_back(m.best, 1 << 20);
  ASSERT_TRUE(lb.ok()) << lb.err().message;
  for (const tier_copy& copy : lb->copies)
    bytes.apply(copy);
  EXPECT_EQ(bytes.device_slot.at(lb->slot), state_word);
  HC_ASSERT_OK(t.load_done(n));
}

TEST_P(hicache, BackupContinuityNeedsTheParentFirst) {
  auto base = seq(1, 2);
  node_ref parent = insert(base);
  node_ref child = insert(cat(base, seq(100, 2)));
  auto early = t.write_backup(child);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.err().code, errc::invalid_argument);
  EXPECT_NE(early.err().message.find("contiguity"), std::string::npos);
  EXPECT_FALSE(child.node->backed_up());
  EXPECT_EQ(t.host_usage().tokens, 0u) << "nothing allocated";
  backup(parent);
  backup(child);
  EXPECT_TRUE(child.node->backed_up());
}

TEST_P(hicache, LoadBackAppendsToThePrefixAndTheQuotaCanRefuse) {
  auto [full, parent, child] = demoted_chain();
  auto m = t.match(0, full);
  ASSERT_EQ(m.last_node, parent);

  auto refused = t.load_back(m.best, -1000000);
  ASSERT_TRUE(refused.ok());
  EXPECT_FALSE(refused->loaded);
  EXPECT_EQ(refused->last_node, parent) << "the old anchor comes back";
  EXPECT_TRUE(child.node->evicted());
  EXPECT_EQ(parent.node->full_lock_ref, 0);

  auto small_quota = t.load_back(m.best, static_cast<std::int64_t>(P));
  ASSERT_TRUE(small_quota.ok());
  EXPECT_FALSE(small_quota->loaded) << "2P tokens do not fit a quota of P";

  auto lb = t.load_back(m.best, 1 << 20);
  ASSERT_TRUE(lb.ok());
  ASSERT_TRUE(lb->loaded);
  std::vector<kv_index> all = m.indices;
  all.insert(all.end(), lb->new_indices.begin(), lb->new_indices.end());
  EXPECT_EQ(all.size(), full.size()) << "prefix + new = all tokens";
  EXPECT_NE(lb->slot, no_slot) << "the SSM state is restored";
  HC_ASSERT_OK(t.load_done(lb->last_node));
  EXPECT_EQ(t.match(0, full).indices, all);
}

TEST_P(hicache, HostEvictionOfStatesKeepsInnerNodes) {
  auto [full, a, b] = demoted_chain();  // b: an H-leaf with a host state
  const std::uint64_t tokens_before = t.counters().host_evicted_tokens;
  EXPECT_EQ(t.evict_mamba_host(2), 2u);
  EXPECT_EQ(t.counters().host_evicted_slots, 2u) << "the H-leaf's state and a's";
  EXPECT_EQ(t.counters().host_evicted_tokens - tokens_before, 2 * P)
      << "the H-leaf's host KV went with it; a keeps its own";
  EXPECT_FALSE(t.valid(b)) << "an H-leaf goes whole";
  ASSERT_TRUE(t.valid(a));
  EXPECT_EQ(a.node->mamba_host, no_slot) << "a device node keeps its KV, loses its host state";
  EXPECT_TRUE(a.node->backed_up());
  EXPECT_EQ(cache.host_slots().available(), cache.host_slots().capacity());
}

TEST_P(hicache, ProtectedHostNodesAreNotEvicted) {
  node_ref n = insert(seq(1, 2));
  backup(n);
  (void)t.evict(2 * P, 0);
  HC_ASSERT_OK(t.protect_host(n));
  EXPECT_EQ(t.evict_host(2 * P), 0u);
  HC_ASSERT_OK(t.protect_host_mamba(n));
  EXPECT_EQ(t.evict_mamba_host(1), 0u);
  HC_ASSERT_OK(t.release_host_mamba(n));
  HC_ASSERT_OK(t.release_host(n));
  EXPECT_EQ(t.release_host(n).err().code, errc::invalid_argument);
  EXPECT_EQ(t.evict_host(2 * P), 2 * P);
}

TEST_P(hicache, InsertOverAnEvictedNodeTakesTheNewDeviceIds) {
  auto key = seq(1, 2);
  node_ref n = insert(key);
  backup(n);
  (void)t.evict(2 * P, 0);
  ASSERT_TRUE(n.node->evicted());
  auto kv = alloc_kv(cache, key.size());
  const slot_id s = cache.slots().alloc_one();
  auto r = t.insert(0, key, kv, s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prefix_len, 2 * P);
  EXPECT_FALSE(r->mamba_exist) << "the device slot was gone: the new one fills it";
  EXPECT_FALSE(n.node->evicted());
  EXPECT_EQ(n.node->value.to_vector(), kv);
  EXPECT_TRUE(n.node->backed_up()) << "the host copy stays";
  EXPECT_EQ(t.match(0, key).indices, kv);
}

TEST_P(hicache, WriteBackBacksUpTheLeafOnEviction) {
  radix_cache wb{hicache_config(P, write_policy::write_back)};
  auto base = seq(1, 2);
  std::vector<kv_index> kv = alloc_kv(wb, 2 * P);
  ASSERT_TRUE(wb.tree().insert(0, base, kv, wb.slots().alloc_one()).ok());
  auto full = cat(base, seq(100, 2));
  std::vector<kv_index> kv2 = kv;
  auto tail = alloc_kv(wb, 2 * P);
  kv2.insert(kv2.end(), tail.begin(), tail.end());
  ASSERT_TRUE(wb.tree().insert(0, full, kv2, wb.slots().alloc_one(), 2 * P).ok());
  EXPECT_TRUE(wb.tree().take_backup_candidates().empty()) << "write_back never backs up on hits";
  auto r = wb.tree().evict(2 * P, 0);
  EXPECT_EQ(r.tokens_evicted, 2 * P);
  auto copies = wb.tree().drain_copies();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].device_kv, tail);
  HC_ASSERT_OK(wb.tree().demotion_done(copies[0]));
  auto m = wb.tree().match(0, full);
  EXPECT_EQ(m.host_hit_length, 2 * P) << "leaf demoted and backed up";
  EXPECT_FALSE(m.last_node.node->backed_up()) << "parent not backed up";
  HC_ASSERT_OK(wb.tree().sanity_check());
}

TEST_P(hicache, WriteThroughPoliciesPickNodesByHits) {
  for (write_policy policy : {write_policy::write_through, write_policy::write_through_selective}) {
    cache_config cfg = hicache_config(P, policy);
    cfg.host_tier.write_through_threshold = 0;  // the policy's own: 1 or 2
    radix_cache c{cfg};
    auto key = seq(1, 2);
    auto kv = alloc_kv(c, key.size());
    ASSERT_TRUE(c.tree().insert(0, key, kv, c.slots().alloc_one()).ok());
    auto first = c.tree().take_backup_candidates();
    EXPECT_EQ(first.size(), policy == write_policy::write_through ? 1u : 0u);
    if (first.empty()) {
      auto kv2 = alloc_kv(c, key.size());
      const slot_id s = c.slots().alloc_one();
      auto r = c.tree().insert(0, key, kv2, s);
      ASSERT_TRUE(r.ok() && r->mamba_exist);
      ASSERT_TRUE(c.slots().free_one(s).ok());
      first = c.tree().take_backup_candidates();
      ASSERT_EQ(first.size(), 1u) << "second hit";
    }
    auto copy = c.tree().write_backup(first[0]);
    ASSERT_TRUE(copy.ok());
    HC_ASSERT_OK(c.tree().backup_done(first[0]));
    HC_ASSERT_OK(c.tree().sanity_check());
  }
}

// Mixed backup / evict / insert / match / load-back / host eviction / demote on small pools, with
// every invariant checked after each step and every id accounted for at the end.
TEST_P(hicache, MixedOperationsKeepEveryInvariant) {
  for (write_policy policy : {write_policy::write_through, write_policy::write_through_selective,
                              write_policy::write_back}) {
    SCOPED_TRACE(static_cast<int>(policy));
    mixed_operations(policy);
  }
}

void hicache::mixed_operations(write_policy policy) {
  cache_config cfg = hicache_config(P, policy);
  cfg.kv_tokens = 24 * P;
  cfg.slots = 12;
  cfg.host_kv_tokens = 40 * P;
  cfg.host_slots = 16;
  cfg.host_tier.write_through_threshold = 0;  // automatic write-through on the first hit
  radix_cache c{cfg};
  radix_tree& tr = c.tree();
  std::mt19937 rng(1234 + static_cast<unsigned>(P));
  auto rand_key = [&] {
    std::vector<token_id> key;
    const int branch = static_cast<int>(rng() % 4);
    const std::size_t pages = 1 + rng() % 6;
    for (std::size_t i = 0; i < pages; ++i) {
      const int tok = (i < 2 ? branch : static_cast<int>(rng() % 3)) * 10 + static_cast<int>(i);
      for (std::size_t j = 0; j < P; ++j)
        key.push_back(tok * 1000 + static_cast<int>(j));
    }
    return key;
  };
  std::vector<node_ref> in_flight;
  std::size_t demote_moved = 0;  // device KV demote_prefix demoted or deferred
  auto back_up_candidates = [&] {
    for (node_ref n : tr.take_backup_candidates()) {
      auto copy = tr.write_backup(n);
      if (copy.ok()) in_flight.push_back(n);
    }
  };
  for (int step = 0; step < 3000; ++step) {
    const unsigned op = rng() % 9;
    if (op <= 2) {  // insert a fresh sequence (evicting for room)
      auto key = rand_key();
      std::vector<kv_index> kv;
      if (!c.alloc_kv(0, 0, key.size(), kv).ok()) continue;
      const slot_id s = c.alloc_slot_evicting();
      if (s == no_slot) {
        ASSERT_TRUE(c.kv().free(kv).ok());
        continue;
      }
      auto r = tr.insert(0, key, kv, s);
      ASSERT_TRUE(r.ok()) << r.err().message;
      if (r->mamba_exist) {
        ASSERT_TRUE(c.slots().free_one(s).ok());
      }
      back_up_candidates();
    } else if (op == 3) {  // acks arrive
      for (node_ref n : in_flight)
        if (tr.valid(n)) {
          HC_ASSERT_OK(tr.backup_done(n));
        }
      in_flight.clear();
    } else if (op == 4) {
      (void)tr.evict(1 + rng() % (8 * P), rng() % 3);
      for (const tier_copy& d : tr.drain_copies())  // write_back demotions: the data plane
        ASSERT_TRUE(tr.demotion_done(d).ok());      // copies them, then releases the node
    } else if (op == 5) {
      (void)tr.evict_host(1 + rng() % (8 * P));
      if (rng() % 2) (void)tr.evict_mamba_host(1);
    } else if (op == 8) {  // demote a prompt's path; its backups start at once
      const demote_report r = tr.demote_prefix(0, rand_key());
      ASSERT_EQ(r.evicted_tokens, 0u) << "a host tier loses nothing";
      demote_moved += r.demoted_tokens + r.deferred_tokens;
      back_up_candidates();
    } else {  // match, load back what is on the host, release
      auto m = tr.match(0, rand_key());
      auto lb = tr.load_back(m.best, static_cast<std::int64_t>(rng() % (16 * P)));
      ASSERT_TRUE(lb.ok()) << lb.err().message;
      if (lb->loaded) {
        HC_ASSERT_OK(tr.load_done(lb->last_node));
      }
    }
    auto inv = tr.check_invariants();
    ASSERT_TRUE(inv.ok()) << "step " << step << " op " << op << ": " << inv.err().message;
  }
  for (node_ref n : in_flight)
    if (tr.valid(n)) {
      HC_ASSERT_OK(tr.backup_done(n));
    }
  HC_ASSERT_OK(tr.sanity_check());
  EXPECT_GT(tr.counters().demoted_tokens, 0u);
  EXPECT_GT(tr.counters().loaded_back_tokens, 0u);
  EXPECT_GT(tr.counters().host_evicted_tokens, 0u);
  EXPECT_GT(tr.counters().host_evicted_slots, 0u);
  EXPECT_GT(demote_moved, 0u);
  if (policy == write_policy::write_through_selective) {
    EXPECT_GT(tr.counters().evicted_tokens, tr.counters().demoted_tokens) << "some deletions";
  }
  // Every id is either free or held by exactly one node.
  EXPECT_EQ(c.kv().available() + tr.sizes().total_tokens(), c.kv().capacity());
  EXPECT_EQ(c.host_kv().available() + tr.host_usage().tokens, c.host_kv().capacity());
  EXPECT_EQ(c.host_slots().available() + tr.host_usage().slots, c.host_slots().capacity());
  EXPECT_EQ(c.slots().available() + tr.sizes().total_slots(), c.slots().capacity());
  tr.reset();
  EXPECT_EQ(c.host_kv().available(), c.host_kv().capacity());
  EXPECT_EQ(c.host_slots().available(), c.host_slots().capacity());
}

TEST(HicacheP1, BestMatchOnAHostStateKeepsTheDeviceAnchor) {
  radix_cache cache{hicache_config(1, write_policy::write_through)};
  radix_tree& t = cache.tree();
  std::vector<token_id> key;
  std::vector<node_ref> chain;
  for (int i = 0; i < 3; ++i) {
    key.push_back(10 + i);
    auto kv = alloc_kv(cache, key.size());
    ASSERT_TRUE(t.insert(0, key, kv, cache.slots().alloc_one(), key.size() - 1).ok());
    chain.push_back(t.match(0, key).best);
  }
  for (node_ref n : chain) {
    ASSERT_TRUE(t.write_backup(n).ok());
    HC_ASSERT_OK(t.backup_done(n));
  }
  (void)t.evict(1, 0);  // the leaf goes to the host
  auto m = t.match(0, key);
  EXPECT_EQ(m.best, chain[2]);
  EXPECT_EQ(m.last_node, chain[1]);
  EXPECT_EQ(m.indices.size(), 3u - 1u);
  EXPECT_EQ(m.host_hit_length, 1u);
  HC_ASSERT_OK(t.sanity_check());
}

TEST(HicacheP1, BranchingLengthIsDisabledUnderHiCache) {
  const auto tokens = iota_tokens(1, 65);  // seq(1, C + 1), C = 64
  {  // without HiCache: the 65-token node has no state -> best = root, branching 64
    cache_config cfg = hicache_config(1, write_policy::write_through);
    cfg.host_kv_tokens = 0;  // no host tier
    radix_cache plain{cfg};
    auto longer = cat(tokens, iota_tokens(500, 1));
    auto kv = alloc_kv(plain, longer.size());
    ASSERT_TRUE(plain.tree().insert(0, longer, kv, plain.slots().alloc_one()).ok());
    auto m = plain.tree().match(0, tokens);  // splits: a stateless 65-token parent
    EXPECT_EQ(m.best, plain.tree().root());
    ASSERT_TRUE(m.branching.has_value());
    EXPECT_EQ(*m.branching, 64u);
  }
  {  // with HiCache: leaf demoted -> best = leaf, device anchor root, no branching
    radix_cache hi{hicache_config(1, write_policy::write_through)};
    auto kv = alloc_kv(hi, tokens.size());
    ASSERT_TRUE(hi.tree().insert(0, tokens, kv, hi.slots().alloc_one()).ok());
    node_ref leaf = hi.tree().match(0, tokens).best;
    ASSERT_TRUE(hi.tree().write_backup(leaf).ok());
    HC_ASSERT_OK(hi.tree().backup_done(leaf));
    (void)hi.tree().evict(65, 0);
    auto m = hi.tree().match(0, tokens);
    EXPECT_EQ(m.best, leaf);
    EXPECT_EQ(m.last_node, hi.tree().root());
    EXPECT_FALSE(m.branching.has_value());
    HC_ASSERT_OK(hi.tree().sanity_check());
  }
}

INSTANTIATE_TEST_SUITE_P(PageSizes, hicache, ::testing::Values(1, 4, 64),
                         [](const auto& param_info) { return page_test_name(param_info.param); });

}  // namespace
}  // namespace hc::test
