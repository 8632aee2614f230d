// The index's memory per cached token (tools/replay/index_memory.hpp): on the bundled SGLang
// traces the measurement counts what the cache owns — allocators at construction, more
// once the tree holds tokens — and the tree holds tokens at the end; a cache that holds more
// tokens owns more heap (the measurement sees the tree, not noise).
#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace hc::replay
