#pragma once
// Shared helpers for tree-level tests: a cache with raw pools, key builders, and
// invariant assertions.

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "actors/radix_cache/radix_cache.hpp"

namespace hc::test {

/// The name of a test instance for a page size: "P64". Built by appending: GCC 12 at -O3
/// warns (-Wrestrict, a false positive: GCC bug 105329) on `"P" + std::to_string(page)`.
inline std::string page_test_name(std::size_t page) {
  std::string name = "P";
  name += std::to_string(page);
  return name;
}

inline std::vector<token_id> toks(std::initializer_list<int> v) {
  return std::vector<token_id>(v.begin(), v.end());
}

/// tokens s, s+1, ..., s+n-1
inline std::vector<token_id> iota_tokens(int s, std::size_t n) {
  std::vector<token_id> v(n);
  std::iota(v.begin(), v.end(), s);
  return v;
}

inline std::vector<token_id> cat(std::vector<token_id> a, const std::vector<token_id>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// KV ids of a fresh sequence of n tokens.
inline std::vector<kv_index> alloc_kv(radix_cache& c, std::size_t n) {
  std::vector<kv_index> out;
  EXPECT_TRUE(c.kv().alloc_extend(0, 0, n, out)) << "KV pool exhausted in test setup";
  return out;
}

inline std::vector<std::vector<token_id>> keys_of(const std::vector<const radix_node*>& nodes) {
  std::vector<std::vector<token_id>> out;
  for (const radix_node* n : nodes)
    out.push_back(n->key);
  return out;
}

/// Every slot id left on the free list, front first (consumes them).
inline std::vector<slot_id> drain_free_slots(radix_cache& c) {
  std::vector<slot_id> out;
  EXPECT_TRUE(c.slots().alloc(c.slots().available(), out));
  return out;
}

#define HC_ASSERT_OK(expr)                                           \
  do {                                                               \
    auto&& hc_s_ = (expr);                                           \
    ASSERT_TRUE(hc_s_.ok()) << #expr << ": " << hc_s_.err().message; \
  } while (0)

}  // namespace hc::test
