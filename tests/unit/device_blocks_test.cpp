// radix_tree::device_blocks() — what `inspect --blocks` lists — is the same list whether the
// tree keeps its page digests (events on: computed at insert, split with their nodes) or
// computes them for the call and drops them (no events: a listing used to leave 32 bytes
// of digest per page behind, 8× the index at page 1); device_page_count() counts it
// without hashing. Random inserts with shared prefixes (splits) and evictions (nodes that
// leave the device), pages 1 and 4.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "actors/radix_cache/radix_cache.hpp"
#include "storage/sha256_page_hasher.hpp"

namespace hc::test {
namespace {

/// Inserts `key` into `c` as a finished request would (fresh ids, a slot for its end).
void insert(radix_cache& c, const std::vector<token_id>& key) {
  std::vector<kv_index> ids;
  if (c.kv().available() < key.size()) c.tree().evict(key.size() - c.kv().available(), 0);
  slot_id s = c.slots().alloc_one();
  if (s == no_slot) {
    c.tree().evict(0, 1);
    s = c.slots().alloc_one();
  }
  ASSERT_NE(s, no_slot);
  ASSERT_TRUE(c.kv().alloc_extend(0, 0, key.size(), ids));
  auto r = c.tree().insert(0, key, ids, s);
  ASSERT_TRUE(r.ok()) << r.err().message;
  if (r->mamba_exist) ASSERT_TRUE(c.slots().free_one(s));
  (void)c.tree().drain_events();
}

class DeviceBlocks : public ::testing::TestWithParam<std::size_t> {};

TEST_P(DeviceBlocks, AreTheSameWhetherTheTreeKeepsItsDigestsOrNot) {
  const std::size_t page = GetParam();
  sha256_page_hasher hasher;
  cache_config cfg;
  cfg.page_size = page;
  cfg.kv_tokens = 2048;
  cfg.slots = 32;
  cache_config kept = cfg;
  kept.enable_events = true;
  radix_cache computed(cfg, &hasher), reference(kept, &hasher);
  std::mt19937_64 rng(page);
  std::vector<std::vector<token_id>> seen;
  std::size_t evictions = 0;
  for (int step = 0; step < 300; ++step) {
    if (rng() % 5 == 0) {  // both lose the same pages
      const std::size_t n = page * (1 + rng() % 64);
      computed.tree().evict(n, 0);
      reference.tree().evict(n, 0);
      ++evictions;
    } else {  // a new prompt: often an earlier one's prefix plus a tail (a split)
      std::vector<token_id> key;
      if (!seen.empty() && rng() % 3 != 0) {
        const auto& base = seen[rng() % seen.size()];
        key.assign(base.begin(),
                   base.begin() + static_cast<std::ptrdiff_t>(base.size() / page * (rng() % 100) /
                                                              100 * page));
      }
      const std::size_t tail = page * (1 + rng() % (96 / page + 1));
      for (std::size_t i = 0; i < tail; ++i)
        key.push_back(static_cast<token_id>(1 + rng() % 50));
      insert(computed, key);
      insert(reference, key);
      seen.push_back(std::move(key));
    }
    const std::vector<device_block> listed = computed.tree().device_blocks();
    ASSERT_EQ(listed, reference.tree().device_blocks()) << "step " << step;
    ASSERT_EQ(computed.tree().device_page_count(), listed.size()) << "step " << step;
    ASSERT_EQ(computed.tree().device_blocks(), listed) << "a second listing, step " << step;
  }
  EXPECT_GT(evictions, 0u);
  EXPECT_GT(computed.tree().device_page_count(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Pages, DeviceBlocks, ::testing::Values(1, 4),
                         [](const auto& info) { return "P" + std::to_string(info.param); });

}  // namespace
}  // namespace hc::test
