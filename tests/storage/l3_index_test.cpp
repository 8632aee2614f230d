// The RocksDB store's flat index (storage/l3_index.hpp) against a model — a hash map, a
// recency list and each segment's values — under random inserts, lookups, erasures,
// touches and relocations; records that stay
// at their address while the table grows; the order after a load; and its heap per value
// within what the store charges for it (index_bytes_per_value), read as the replayer's
// memory figures are (glibc's heap in use).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <list>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "storage/l3_index.hpp"
#include "storage/rocksdb_store.hpp"
#include "tools/replay/index_memory.hpp"

namespace hc::test {
namespace {

std::string key_of(std::uint64_t i, std::size_t bytes) {
  std::string k = std::to_string(i * 2654435761u);
  k.resize(std::max(bytes, k.size()), '.');
  return k;
}

l3_value_entry entry_with(std::uint64_t seq) {
  l3_value_entry e;
  e.size = seq * 3 + 24;
  e.seq = seq;
  e.at = {seq % 7 + 1, seq * 64};
  e.checksum = seq ^ 0x9e3779b97f4a7c15ull;
  return e;
}

/// Every key of the model is found with its entry, nothing else is counted, the recency
/// order is the model's, and each segment lists the model's values of it in the order they
/// were placed there.
void expect_same(const l3_index& ix, const std::unordered_map<std::string, std::uint64_t>& keys,
                 const std::list<std::string>& order,
                 const std::map<std::uint64_t, std::list<std::string>>& by_segment) {
  ASSERT_EQ(ix.size(), keys.size());
  ASSERT_EQ(ix.check(), "");
  for (const auto& [k, seq] : keys) {
    const l3_index::record* r = ix.find(k);
    ASSERT_NE(r, nullptr) << k;
    ASSERT_EQ(r->key(), k);
    ASSERT_EQ(r->e.checksum, entry_with(seq).checksum) << k;
  }
  std::vector<std::uint64_t> ids = ix.segment_ids(), want_ids;
  for (const auto& [segment, ks] : by_segment)
    if (!ks.empty()) want_ids.push_back(segment);
  std::sort(ids.begin(), ids.end());
  ASSERT_EQ(ids, want_ids) << "the segments holding values";
  for (std::uint64_t segment = 0; segment <= 9; ++segment) {
    const auto it = by_segment.find(segment);
    const std::list<std::string> none;
    const std::list<std::string>& want = it == by_segment.end() ? none : it->second;
    ASSERT_EQ(ix.count_in_segment(segment), want.size()) << "segment " << segment;
    auto w = want.begin();
    for (const l3_index::record* r = ix.first_in_segment(segment); r != nullptr;
         r = r->next_in_segment(), ++w) {
      ASSERT_NE(w, want.end()) << "segment " << segment << " lists more values than it holds";
      ASSERT_EQ(r->key(), *w) << "segment " << segment;
      ASSERT_EQ(r->e.at.segment, segment);
    }
    ASSERT_EQ(w, want.end()) << "segment " << segment << " misses values";
  }
  auto m = order.begin();
  for (const l3_index::record* r = ix.least_recent(); r != nullptr; r = r->more_recent(), ++m) {
    ASSERT_NE(m, order.end()) << "the index lists more values than it holds";
    ASSERT_EQ(r->key(), *m);
  }
  ASSERT_EQ(m, order.end()) << "the recency order misses values";
}

TEST(L3Index, RandomOperationsAgreeWithAModel) {
  std::mt19937_64 rng(20261127);
  l3_index ix;
  std::unordered_map<std::string, std::uint64_t> keys;
  std::list<std::string> order;                                // least recent first
  std::map<std::uint64_t, std::list<std::string>> by_segment;  // in the order placed there
  std::uint64_t seq = 0;
  // Short keys and few distinct ones: long probe runs, many erasures inside them.
  for (int op = 0; op < 100000; ++op) {
    const std::string k = key_of(rng() % 3000, rng() % 3 == 0 ? 80 : 1 + rng() % 12);
    const int what = static_cast<int>(rng() % 10);
    l3_index::record* r = ix.find(k);
    ASSERT_EQ(r != nullptr, keys.count(k) == 1) << k;
    if (r == nullptr && what < 6) {
      const l3_value_entry e = entry_with(++seq);
      ix.insert(k, e);
      keys[k] = seq;
      order.push_back(k);
      by_segment[e.at.segment].push_back(k);
    } else if (r != nullptr && what < 4) {
      by_segment[r->e.at.segment].remove(k);
      ix.erase(r);
      keys.erase(k);
      order.remove(k);
    } else if (r != nullptr && what < 6) {  // to another segment, or a new place in its own
      const value_location to{rng() % 10, rng()};
      by_segment[r->e.at.segment].remove(k);
      ix.relocate(r, to);
      by_segment[to.segment].push_back(k);
      ASSERT_EQ(r->e.at, to);
      ASSERT_EQ(r->e.checksum, entry_with(keys[k]).checksum) << "relocate keeps the rest";
    } else if (r != nullptr) {
      ix.make_most_recent(r);
      order.remove(k);
      order.push_back(k);
    }
    if (op % 10000 == 0) expect_same(ix, keys, order, by_segment);
  }
  expect_same(ix, keys, order, by_segment);
  // Everything out, in random order: the table is empty again.
  std::vector<std::string> all(order.begin(), order.end());
  std::shuffle(all.begin(), all.end(), rng);
  for (const std::string& k : all) {
    l3_index::record* r = ix.find(k);
    by_segment[r->e.at.segment].remove(k);
    ix.erase(r);
    keys.erase(k);
    order.remove(k);
    ASSERT_EQ(ix.find(k), nullptr);
  }
  expect_same(ix, keys, order, by_segment);
  EXPECT_EQ(ix.least_recent(), nullptr);
}

// check() is what the store's tests lean on: it must see a location changed behind the
// index's back.
TEST(L3Index, CheckFindsALocationChangedWithoutRelocate) {
  l3_index ix;
  for (std::uint64_t i = 0; i < 50; ++i)
    ix.insert(key_of(i, 20), entry_with(i + 1));
  ASSERT_EQ(ix.check(), "");
  l3_index::record* r = ix.find(key_of(7, 20));
  const value_location was = r->e.at;
  r->e.at.segment = was.segment + 50;  // what the store must never do
  EXPECT_NE(ix.check().find("without relocate"), std::string::npos) << ix.check();
  r->e.at = was;
  ix.relocate(r, {was.segment + 100, 0});
  EXPECT_EQ(ix.check(), "");
  EXPECT_EQ(ix.count_in_segment(was.segment + 100), 1u);
  EXPECT_EQ(ix.first_in_segment(was.segment + 100), r);
  ix.erase(r);
  EXPECT_EQ(ix.count_in_segment(was.segment + 100), 0u);
  EXPECT_EQ(ix.first_in_segment(was.segment + 100), nullptr);
  EXPECT_EQ(ix.check(), "");
}

TEST(L3Index, RecordsStayAtTheirAddressWhileTheTableGrows) {
  l3_index ix;
  std::vector<const l3_index::record*> first;
  for (std::uint64_t i = 0; i < 100; ++i)
    first.push_back(ix.insert(key_of(i, 20), entry_with(i + 1)));
  for (std::uint64_t i = 100; i < 100000; ++i)  // many rehashes
    ix.insert(key_of(i, 20), entry_with(i + 1));
  for (std::uint64_t i = 0; i < 100; ++i)
    EXPECT_EQ(ix.find(key_of(i, 20)), first[i]) << i;
}

TEST(L3Index, ALoadIsOrderedBySequence) {
  l3_index ix;
  ix.reserve(1000);
  std::vector<std::uint64_t> seqs(1000);
  for (std::uint64_t i = 0; i < seqs.size(); ++i)
    seqs[i] = i + 1;
  std::shuffle(seqs.begin(), seqs.end(), std::mt19937_64(7));
  for (std::uint64_t s : seqs)
    ix.insert(key_of(s, 40), entry_with(s));
  ix.order_by_seq();
  std::uint64_t expect = 1;
  for (const l3_index::record* r = ix.least_recent(); r != nullptr; r = r->more_recent())
    EXPECT_EQ(r->e.seq, expect++);
  EXPECT_EQ(expect, seqs.size() + 1);
}

TEST(L3Index, HeapPerValueIsWithinItsCharge) {
  if (!replay::heap_accounting_works())
    GTEST_SKIP() << "the allocator does not report its heap in use (mallinfo2): a sanitizer "
                    "build replaces malloc";
  for (std::size_t key_bytes : {17u, 65u, 84u, 200u}) {
    constexpr std::uint64_t n = 200000;
    std::vector<std::string> ks;
    ks.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i)
      ks.push_back(key_of(i, key_bytes));
    const auto heap = [] { return replay::heap_in_use(); };
    const std::size_t before = heap();
    {
      l3_index ix;
      for (std::uint64_t i = 0; i < n; ++i)
        ix.insert(ks[i], entry_with(i + 1));
      const double per_value = static_cast<double>(heap() - before) / n;
      const double charge = static_cast<double>(index_bytes_per_value(key_bytes));
      std::printf("%zu-byte keys: %.1f heap bytes a value, %.0f charged\n", key_bytes, per_value,
                  charge);
      EXPECT_LE(per_value, charge) << key_bytes << "-byte keys: the charge is below the heap";
      EXPECT_GE(per_value, charge * 0.75)
          << key_bytes << "-byte keys: the charge is far above the heap (the limit wastes it)";
      EXPECT_LE(ix.requested_bytes() / n, static_cast<std::size_t>(per_value));
    }
    EXPECT_LE(heap(), before + 4096) << "the index gave its heap back";
  }
}

}  // namespace
}  // namespace hc::test
