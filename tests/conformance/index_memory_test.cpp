// The index's memory per cached token (tools/replay/index_memory.hpp): on the bundled SGLang
// traces the measurement counts what the cache owns — allocators at construction, more
// once the tree holds tokens — and the tree holds tokens at the end; a cache that holds more
// tokens owns more heap (the measurement sees the tree, not noise).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "actors/radix_cache/radix_cache.hpp"
#include "storage/sha256_page_hasher.hpp"
#include "tools/replay/index_memory.hpp"

namespace hc::replay {
namespace {

std::string data(const char* name) {
  return std::string(HC_TEST_DATA_DIR) + "/" + name;
}

#define SKIP_WITHOUT_HEAP_ACCOUNTING()                                                      \
  if (!heap_accounting_works())                                                             \
  GTEST_SKIP() << "the allocator does not report its heap in use (mallinfo2): a sanitizer " \
                  "build replaces malloc"

TEST(IndexMemory, MeasuresWhatTheCacheOwnsPerCachedToken) {
  SKIP_WITHOUT_HEAP_ACCOUNTING();
  for (const char* name : {"p1_ctx4k_c100.jsonl.gz", "p64_ctx4k_c100.jsonl.gz"}) {
    auto t = read_trace(data(name));
    ASSERT_TRUE(t.ok()) << t.err().message;
    auto m = measure_index_memory(*t);
    ASSERT_TRUE(m.ok()) << m.err().message;
    EXPECT_EQ(m->ops, t->ops.size());
    EXPECT_GT(m->cached_tokens, 0u) << name;
    EXPECT_GT(m->tree_nodes, 0u) << name;
    EXPECT_GT(m->slot_nodes, 0u) << name << ": conversations end in nodes holding a slot";
    EXPECT_LE(m->slot_nodes, m->tree_nodes) << name;
    EXPECT_GT(m->bytes_at_start, 0u) << name << ": the allocators own their free lists";
    EXPECT_GT(m->bytes_at_end, m->bytes_at_start) << name << ": the tree owns its nodes";
    EXPECT_GT(m->growth_per_cached_token(), 0.0);
    EXPECT_GE(m->total_per_cached_token(), m->growth_per_cached_token());
  }
}

TEST(IndexMemory, AnEarlierPointOfTheTraceOwnsLess) {
  SKIP_WITHOUT_HEAP_ACCOUNTING();
  auto t = read_trace(data("p1_ctx4k_c100.jsonl.gz"));
  ASSERT_TRUE(t.ok());
  auto full = measure_index_memory(*t);
  ASSERT_TRUE(full.ok());
  trace early = *t;
  early.ops.resize(t->ops.size() / 4);  // early on: fewer conversations cached
  auto part = measure_index_memory(early);
  ASSERT_TRUE(part.ok());
  ASSERT_LT(part->cached_tokens, full->cached_tokens);
  EXPECT_LT(part->bytes_at_end, full->bytes_at_end);
}

// `inspect --blocks` lists every device page with its chained digest; a tree that keeps no
// digests (no KV events, no tier) computes them for the listing and keeps none: listing a
// page-1 tree used to leave 32 bytes per cached token behind (8× the index), for good.
TEST(IndexMemory, ListingTheDevicePagesLeavesNothingBehind) {
  SKIP_WITHOUT_HEAP_ACCOUNTING();
  sha256_page_hasher hasher;
  cache_config cfg;
  cfg.kv_tokens = 1 << 16;
  cfg.slots = 64;
  radix_cache cache(cfg, &hasher);
  std::mt19937_64 rng(7);
  for (int c = 0; c < 32; ++c) {  // 32 conversations of 2,048 tokens
    std::vector<token_id> key(2048);
    for (auto& t : key)
      t = static_cast<token_id>(1 + rng() % 150000);
    std::vector<kv_index> ids;
    ASSERT_TRUE(cache.kv().alloc_extend(0, 0, key.size(), ids));
    ASSERT_TRUE(cache.tree().insert(0, key, ids, cache.slots().alloc_one()).ok());
  }
  (void)hasher.hash_page(nullptr, std::vector<token_id>{1});  // OpenSSL's one-time set-up
  const std::size_t before = heap_in_use();
  EXPECT_EQ(cache.tree().device_blocks().size(), 32u * 2048u);
  EXPECT_LT(heap_in_use(), before + 4096) << "the listing's digests stayed in the tree";
}

}  // namespace
}  // namespace hc::replay
