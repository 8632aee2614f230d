// Module tests of the tree's building blocks, one suite per module: id_ring and run_ring
// (the free lists), lru_list (the three LRU orders), kv events (block hashes, paged events) and the
// radix_tree itself (split, match, insert dedup, eviction order) — each with the tree's
// invariants checked after every change.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <ostream>
#include <random>
#include <utility>
#include <vector>

#include <set>
#include <string>

#include "actors/radix_cache/id_ring.hpp"
#include "actors/radix_cache/id_runs.hpp"
#include "actors/radix_cache/instance_stats.hpp"
#include "actors/radix_cache/lru_list.hpp"
#include "actors/radix_cache/node_kv.hpp"
#include "actors/radix_cache/run_ring.hpp"
#include "storage/sha256_page_hasher.hpp"
#include "tests/support/tree_fixture.hpp"

namespace hc::test {
namespace {

// ---- id_ring ----------------------------------------------------------------------------

std::vector<std::int32_t> contents(const id_ring& r) {
  std::vector<std::int32_t> v;
  for (std::size_t i = 0; i < r.size(); ++i)
    v.push_back(r[i]);
  return v;
}

TEST(IdRing, FifoWithFrontPushesAcrossTheWrap) {
  id_ring r(5);  // not a power of two: the buffer holds exactly 5
  EXPECT_EQ(r.capacity(), 5u);
  for (std::int32_t i = 1; i <= 5; ++i)
    r.push_back(i);
  EXPECT_TRUE(r.full());
  EXPECT_EQ(r.pop_front(), 1);
  EXPECT_EQ(r.pop_front(), 2);
  r.push_back(6);   // wraps in the buffer
  r.push_front(2);  // a freed id goes back in front
  EXPECT_EQ(contents(r), (std::vector<std::int32_t>{2, 3, 4, 5, 6}));
  std::vector<std::int32_t> out{9};
  r.pop_front_into(3, out);
  EXPECT_EQ(out, (std::vector<std::int32_t>{9, 2, 3, 4}));
  EXPECT_EQ(contents(r), (std::vector<std::int32_t>{5, 6}));
  r.clear();
  EXPECT_TRUE(r.empty());
  r.reset_capacity(2);
  r.push_front(7);
  r.push_front(8);
  EXPECT_TRUE(r.full());
  EXPECT_EQ(contents(r), (std::vector<std::int32_t>{8, 7}));
}

TEST(IdRing, PopsIntoOutKeepTheOrderAcrossTheWrap) {
  id_ring r(6);
  for (std::int32_t i = 1; i <= 5; ++i)
    r.push_back(i);
  std::vector<std::int32_t> out;
  r.pop_front_into(4, out);  // head at 4: the next range wraps
  for (std::int32_t id : {10, 11, 12, 13, 14})
    r.push_back(id);
  EXPECT_EQ(contents(r), (std::vector<std::int32_t>{5, 10, 11, 12, 13, 14}));
  EXPECT_TRUE(r.full());
  out.clear();
  r.pop_front_into(6, out);  // a pop across the wrap
  EXPECT_EQ(out, (std::vector<std::int32_t>{5, 10, 11, 12, 13, 14}));
  EXPECT_TRUE(r.empty());
}

// ---- run_ring ---------------------------------------------------------------------------

std::vector<std::int32_t> contents(const run_ring& r) {
  std::vector<std::int32_t> v;
  r.for_each_run([&v](id_run run) {
    for (std::uint32_t i = 0; i < run.length; ++i)
      v.push_back(run.first + static_cast<std::int32_t>(i));
  });
  return v;
}

std::vector<std::int32_t> ids_from(std::int32_t first, std::int32_t last) {
  std::vector<std::int32_t> v;
  for (std::int32_t i = first; i <= last; ++i)
    v.push_back(i);
  return v;
}

TEST(RunRing, ARunThatContinuesItsNeighbourMergesWithIt) {
  run_ring r(16);
  r.push_back_run(3, 4);  // 3..6
  EXPECT_EQ(r.entries(), 2u);
  r.push_back_run(7, 2);  // continues: 3..8
  EXPECT_EQ(r.entries(), 2u);
  r.push_back_run(12, 1);  // a single id
  EXPECT_EQ(r.entries(), 3u);
  r.push_back_run(13, 1);  // the single id starts the run 12..13
  EXPECT_EQ(r.entries(), 4u);
  r.push_front(2);         // extends the front run downwards
  r.push_front_run(1, 1);  // and again: 1..8
  EXPECT_EQ(r.entries(), 4u);
  std::vector<std::int32_t> want = ids_from(1, 8);
  want.insert(want.end(), {12, 13});
  EXPECT_EQ(contents(r), want);
  EXPECT_EQ(r.size(), 10u);

  std::vector<std::int32_t> out;
  std::vector<std::pair<std::int32_t, std::size_t>> runs;
  r.pop_front_into(7, out, [&runs](std::int32_t f, std::size_t k) { runs.emplace_back(f, k); });
  EXPECT_EQ(out, ids_from(1, 7));
  EXPECT_EQ(runs, (std::vector<std::pair<std::int32_t, std::size_t>>{{1, 7}}));
  EXPECT_EQ(r.entries(), 3u) << "8 left alone is a single entry";
  EXPECT_EQ(r.pop_front(), 8);
  EXPECT_EQ(r.pop_front(), 12);
  EXPECT_EQ(r.entries(), 1u) << "13 left alone";
  r.push_back_run(14, 3);  // 13..16
  EXPECT_EQ(r.entries(), 2u);
  r.push_front_run(10, 3);  // 10..12 ends where the front run starts: 10..16
  EXPECT_EQ(r.entries(), 2u);
  EXPECT_EQ(contents(r), ids_from(10, 16));
}

// ---- node_kv -------------------------------------------------------------------------

/// Every way node_kv hands out its ids, each checked against `want`.
void expect_ids(const node_kv& v, const std::vector<kv_index>& want) {
  ASSERT_EQ(v.size(), want.size());
  EXPECT_EQ(v.to_vector(), want);
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(v[i], want[i]) << "at " << i;
  for (std::size_t from = 0; from <= want.size(); ++from) {
    std::vector<kv_index> out(want.size() - from + 1, -7);  // one guard past the end
    v.copy_to(out.data(), from);
    ASSERT_EQ(out.back(), -7) << "wrote past the end from " << from;
    out.pop_back();
    ASSERT_TRUE(
        std::equal(out.begin(), out.end(), want.begin() + static_cast<std::ptrdiff_t>(from)))
        << "from " << from;
  }
  std::vector<kv_index> appended{42};
  v.append_to(appended);
  EXPECT_EQ(appended.front(), 42);
  EXPECT_TRUE(std::equal(appended.begin() + 1, appended.end(), want.begin(), want.end()));
  EXPECT_FALSE(v.has_slack());
}

// The run that starts a list ends at the first id off it, wherever that falls: in a
// 16-id vector step, at a step's edge, or in the tail after the steps.
TEST(IdRuns, TheLeadingRunEndsAtTheFirstIdOffIt) {
  EXPECT_EQ(leading_run_length(std::vector<kv_index>{5}), 1u);
  EXPECT_EQ(leading_run_length(std::vector<kv_index>{5, 7}), 1u);
  for (std::size_t len : {2u, 16u, 17u, 18u, 33u, 40u, 100u}) {
    std::vector<kv_index> ids = ids_from(1000, 1000 + static_cast<kv_index>(len) - 1);
    EXPECT_EQ(leading_run_length(ids), len) << "the whole list";
    ids.push_back(ids.back() + 2);
    ids.push_back(ids.back() + 1);
    EXPECT_EQ(leading_run_length(ids), len) << "a run of " << len << ", then a gap";
    EXPECT_TRUE(is_one_run(std::span<const kv_index>(ids).first(len)));
    EXPECT_FALSE(is_one_run(ids));
  }
}

// Every build of the vector code this CPU runs (AVX-512, AVX2, the baseline) gives what a
// scalar loop gives, for group and run lengths on both sides of every vector width and its
// four-vector step: a host runs only its widest build, so without this a machine with
// AVX-512 (this one) would never run the others, which hosts without it use for every
// node's ids.
TEST(IdRuns, EveryBuildTheCpuRunsAgreesWithAScalarLoop) {
  const auto builds = id_runs_detail::runnable_implementations();
  ASSERT_FALSE(builds.empty());
  EXPECT_STREQ(builds.back().name, "baseline");
  std::mt19937 rng(7);
  auto deviation_ref = [](const std::vector<std::uint32_t>& id, std::size_t group,
                          std::uint32_t first_bits) {
    std::uint32_t bad = 0;
    for (std::size_t at = 0; at < id.size(); at += group) {
      bad |= id[at] & first_bits;
      for (std::size_t i = 0; i < group; ++i)
        bad |= id[at + i] ^ (id[at] + static_cast<std::uint32_t>(i));
    }
    return bad;
  };
  const std::size_t lengths[] = {1,  2,  3,  4,  5,  7,  8,   9,   15,  16,  17,  31,
                                 32, 33, 63, 64, 65, 67, 127, 128, 129, 255, 256, 1000};
  for (const auto& b : builds) {
    SCOPED_TRACE(b.name);
    for (std::size_t group : lengths) {
      for (std::size_t groups : {1u, 3u}) {
        for (std::uint32_t first_bits : {0u, 63u | 0x80000000u}) {
          std::vector<std::uint32_t> id;
          for (std::size_t g = 0; g < groups; ++g) {
            const auto first = static_cast<std::uint32_t>(rng() % 4096) * 64;  // page starts
            for (std::size_t i = 0; i < group; ++i)
              id.push_back(first + static_cast<std::uint32_t>(i));
          }
          ASSERT_EQ(b.deviation(id.data(), id.size(), group, first_bits), 0u)
              << "runs of " << group;
          for (int k = 0; k < 4; ++k) {  // one id off its run, anywhere (the first too)
            std::vector<std::uint32_t> off = id;
            off[rng() % off.size()] ^= 1u << (rng() % 32);
            ASSERT_EQ(b.deviation(off.data(), off.size(), group, first_bits),
                      deviation_ref(off, group, first_bits))
                << "runs of " << group;
          }
        }
      }
    }
    for (std::size_t run_len : lengths) {
      for (std::size_t runs : {1u, 2u, 5u}) {
        std::vector<std::uint32_t> firsts(runs);
        for (auto& f : firsts)
          f = static_cast<std::uint32_t>(rng() % 100000);
        std::vector<std::uint32_t> want;
        for (std::uint32_t f : firsts)
          for (std::size_t i = 0; i < run_len; ++i)
            want.push_back(f + static_cast<std::uint32_t>(i));
        for (std::size_t skip :
             {std::size_t{0}, std::size_t{1}, run_len - 1, run_len, want.size() / 2, want.size()}) {
          std::vector<std::uint32_t> out(want.size() - skip + 1, 0xdeadbeefu);
          b.fill(out.data(), firsts.data(), runs, run_len, skip);
          ASSERT_EQ(out.back(), 0xdeadbeefu) << "wrote past the end: runs of " << run_len;
          out.pop_back();
          ASSERT_TRUE(std::equal(out.begin(), out.end(),
                                 want.begin() + static_cast<std::ptrdiff_t>(skip), want.end()))
              << runs << " runs of " << run_len << ", skipping " << skip;
        }
      }
    }
  }
}

// A run of 100 ids (long enough for every vector width's loop and its tail) kept as one
// stored id, split anywhere into two runs; the ids are those of the listed form.
TEST(NodeKv, OneRunIsOneStoredIdAndSplitsAnywhere) {
  const std::vector<kv_index> ids = ids_from(1000, 1099);
  for (std::size_t at : {1u, 7u, 16u, 33u, 99u}) {
    node_kv runs;
    runs.assign_runs(ids, ids.size());
    EXPECT_EQ(runs.stored().size(), 1u);
    EXPECT_FALSE(runs.holds_storage()) << "one run: its first id inline";
    expect_ids(runs, ids);
    node_kv front = runs.split_front(at);
    expect_ids(front,
               std::vector<kv_index>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(at)));
    expect_ids(runs,
               std::vector<kv_index>(ids.begin() + static_cast<std::ptrdiff_t>(at), ids.end()));
    EXPECT_EQ(front.run_length(), at);
    EXPECT_EQ(runs.run_length(), ids.size() - at);
  }
}

// for_each_run spells the value in every form: the encoded entries, each stored run of the
// runs form (pages 3 and 4 stay two runs), the maximal runs of the listed form.
TEST(NodeKv, ForEachRunSpellsTheValueInEveryForm) {
  std::vector<kv_index> ids = ids_from(12, 19);  // pages 3 and 4 of 4: adjacent
  for (kv_index i = 0; i < 4; ++i)
    ids.push_back(40 + i);  // page 10
  const auto runs_of = [](const node_kv& v) {
    std::vector<std::pair<kv_index, std::size_t>> out;
    v.for_each_run([&](kv_index first, std::size_t len) { out.emplace_back(first, len); });
    return out;
  };
  using runs = std::vector<std::pair<kv_index, std::size_t>>;
  node_kv pages;
  pages.assign_runs(ids, 4);
  EXPECT_EQ(runs_of(pages), (runs{{12, 4}, {16, 4}, {40, 4}}));
  node_kv listed;
  listed.assign(ids);
  EXPECT_EQ(runs_of(listed), (runs{{12, 8}, {40, 4}}));
  std::vector<kv_index> scattered = ids_from(100, 139);
  scattered.push_back(7);  // a lone id
  for (kv_index i = 0; i < 40; ++i)
    scattered.push_back(500 + i);
  node_kv encoded;
  ASSERT_TRUE(encoded.assign_encoded(scattered));
  ASSERT_TRUE(encoded.encoded());
  EXPECT_EQ(runs_of(encoded), (runs{{100, 40}, {7, 1}, {500, 40}}));
}

// Pages of 4 kept as one id per page, in any page order; split between pages. The listed
// form of the same ids splits anywhere.
TEST(NodeKv, PagesAreOneStoredIdPerPageAndSplitBetweenPages) {
  std::vector<kv_index> ids = ids_from(12, 15);  // page 3
  for (kv_index p : {1, 7, 2})
    for (kv_index i = 0; i < 4; ++i)
      ids.push_back(p * 4 + i);
  node_kv pages;
  pages.assign_runs(ids, 4);
  EXPECT_EQ(pages.stored().size(), 4u);
  EXPECT_EQ(pages.run_length(), 4u);
  expect_ids(pages, ids);
  node_kv front = pages.split_front(8);
  expect_ids(front, std::vector<kv_index>(ids.begin(), ids.begin() + 8));
  expect_ids(pages, std::vector<kv_index>(ids.begin() + 8, ids.end()));
  EXPECT_EQ(pages.stored().size(), 2u);
  node_kv page = pages.split_front(4);  // one page on either side: each inline
  expect_ids(page, std::vector<kv_index>(ids.begin() + 8, ids.begin() + 12));
  expect_ids(pages, std::vector<kv_index>(ids.begin() + 12, ids.end()));
  EXPECT_FALSE(page.holds_storage());
  EXPECT_FALSE(pages.holds_storage());
  EXPECT_EQ(pages.run_length(), 4u);

  node_kv listed;
  listed.assign(ids);
  EXPECT_EQ(listed.run_length(), 0u);
  expect_ids(listed, ids);
  node_kv head = listed.split_front(3);
  expect_ids(head, std::vector<kv_index>(ids.begin(), ids.begin() + 3));
  expect_ids(listed, std::vector<kv_index>(ids.begin() + 3, ids.end()));
  listed.release();
  EXPECT_TRUE(listed.empty());
  EXPECT_FALSE(listed.holds_storage());
}

// The ids an id-by-id queue holds, whatever the pushes and pops, across the wrap; entries
// never outnumber ids, so a ring of the pool's size never overflows.
TEST(RunRing, HoldsWhatAnIdQueueHoldsThroughRandomPushesAndPops) {
  constexpr std::size_t cap = 48;
  run_ring r(cap);
  id_ring q(cap);
  std::size_t most_entries = 0;
  std::uint64_t state = 7;
  const auto rnd = [&state](std::uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::int32_t>((state >> 33) % n);
  };
  for (int step = 0; step < 20000; ++step) {
    const std::size_t room = cap - q.size();
    const int op = rnd(6);
    // Ids near the ends of what is held, so that merges happen often.
    const std::int32_t near_back = q.empty() ? 1 : q[q.size() - 1] + 1;
    const std::int32_t near_front = q.empty() ? 40 : q[0] - 1;
    if (op == 0 && room > 0) {
      const std::size_t n = 1 + static_cast<std::size_t>(rnd(std::min<std::size_t>(room, 6)));
      const std::int32_t first = rnd(3) == 0 ? 1 + rnd(60) : std::max(1, near_back);
      r.push_back_run(first, n);
      for (std::size_t i = 0; i < n; ++i)
        q.push_back(first + static_cast<std::int32_t>(i));
    } else if (op == 1 && room > 0) {
      const std::int32_t v = rnd(3) == 0 ? 1 + rnd(60) : std::max(1, near_front);
      r.push_front(v);
      q.push_front(v);
    } else if (op == 2 && room > 0) {
      const std::size_t n = 1 + static_cast<std::size_t>(rnd(std::min<std::size_t>(room, 6)));
      const std::int32_t first =
          rnd(3) == 0 ? 1 + rnd(60) : std::max(1, near_front - static_cast<std::int32_t>(n) + 1);
      r.push_front_run(first, n);
      for (std::size_t i = n; i-- > 0;)
        q.push_front(first + static_cast<std::int32_t>(i));
    } else if (op == 3 && !q.empty()) {
      EXPECT_EQ(r.pop_front(), q.pop_front());
    } else if (op >= 4 && !q.empty()) {
      const std::size_t n = 1 + static_cast<std::size_t>(rnd(static_cast<std::int32_t>(q.size())));
      std::vector<std::int32_t> got{-1}, want{-1}, from_runs{-1};
      r.pop_front_into(n, got, [&from_runs](std::int32_t f, std::size_t k) {
        for (std::size_t i = 0; i < k; ++i)
          from_runs.push_back(f + static_cast<std::int32_t>(i));
      });
      q.pop_front_into(n, want);
      EXPECT_EQ(got, want);
      EXPECT_EQ(from_runs, want) << "the runs reported are the ids handed out";
    }
    ASSERT_EQ(r.size(), q.size()) << "step " << step;
    ASSERT_LE(r.entries(), r.size()) << "step " << step;
    ASSERT_LE(r.buffer_entries(), cap) << "step " << step;
    ASSERT_EQ(contents(r), contents(q)) << "step " << step;
    most_entries = std::max(most_entries, r.entries());
  }
  EXPECT_GT(most_entries, 16u) << "the buffer grew past its first size (and wrapped) on the way";
}

// ---- child_list ---------------------------------------------------------------------------

TEST(ChildList, FirstTokensStayBesideTheirChildrenThroughRemovalsAndReplacement) {
  radix_node a, b, c, split_parent;
  a.key = {10, 11};
  b.key = {20};
  c.key = {30, 31, 32};
  split_parent.key = {20};  // a split's new parent starts with the child's token
  child_list l{&a, &b};
  l.push_back(&c);
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(std::vector<token_id>(l.first_tokens().begin(), l.first_tokens().end()),
            (std::vector<token_id>{10, 20, 30}));
  l.remove(&a);  // the last child takes its place
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0], &c);
  EXPECT_EQ(l.first_token(0), 30);
  EXPECT_EQ(l[1], &b);
  EXPECT_EQ(l.first_token(1), 20);
  l.replace(&b, &split_parent);
  EXPECT_EQ(l[1], &split_parent);
  EXPECT_EQ(l.first_token(1), 20);
  l.clear();
  EXPECT_TRUE(l.empty());
  EXPECT_TRUE(l.first_tokens().empty());
}

// One child is kept inline; a second moves both to the list, and removing back to one moves
// the survivor inline again: positions, first tokens and find agree throughout.
TEST(ChildList, OneChildIsInlineAndTwoAreListed) {
  radix_node a, b, stand_in;
  a.key = {10};
  b.key = {20, 21};
  stand_in.key = {20};
  const auto finds = [](const child_list& l, const radix_node* want) {
    return l.find(want->key[0], [want](const radix_node* c) { return c == want; }) == want;
  };
  child_list l;
  EXPECT_EQ(l.begin(), l.end());
  l.push_back(&a);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0], &a);
  EXPECT_EQ(l.first_token(0), 10);
  EXPECT_EQ(std::vector<radix_node*>(l.begin(), l.end()), std::vector<radix_node*>{&a});
  EXPECT_TRUE(finds(l, &a));
  l.push_back(&b);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(b.child_index, 1u);
  EXPECT_TRUE(finds(l, &a));
  EXPECT_TRUE(finds(l, &b));
  l.remove(&a);  // b moves into slot 0, inline
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0], &b);
  EXPECT_EQ(b.child_index, 0u);
  EXPECT_EQ(l.first_token(0), 20);
  EXPECT_FALSE(finds(l, &a));
  l.replace(&b, &stand_in);  // a split of the only child
  EXPECT_EQ(l[0], &stand_in);
  EXPECT_EQ(stand_in.child_index, 0u);
  EXPECT_TRUE(finds(l, &stand_in));
  l.remove(&stand_in);
  EXPECT_TRUE(l.empty());
  EXPECT_TRUE(l.first_tokens().empty());
  EXPECT_EQ(l.find(20, [](const radix_node*) { return true; }), nullptr);
  l.push_back(&a);
  EXPECT_TRUE(finds(l, &a));
}

// A wide list (a system prompt with many conversations) finds each child through its hash
// index, through removals (which move the last child into the gap), replacements and the
// index's drop below half the threshold; children sharing a first token are all found.
TEST(ChildList, AWideListFindsEveryChildThroughItsIndex) {
  constexpr std::size_t n = child_list::wide * 3;
  std::vector<std::unique_ptr<radix_node>> nodes;
  child_list l;
  for (std::size_t i = 0; i < n; ++i) {
    nodes.push_back(std::make_unique<radix_node>());
    nodes.back()->key = {static_cast<token_id>(i / 2), static_cast<token_id>(i)};  // pairs
    l.push_back(nodes.back().get());
  }
  ASSERT_TRUE(l.indexed());
  const auto found = [&](const radix_node* want) {
    return l.find(want->key[0], [want](const radix_node* c) { return c == want; }) == want;
  };
  for (const auto& x : nodes)
    ASSERT_TRUE(found(x.get())) << x->key[1];
  EXPECT_EQ(l.find(static_cast<token_id>(n), [](const radix_node*) { return true; }), nullptr);

  radix_node stand_in;  // a split's new parent: same first token
  stand_in.key = nodes[7]->key;
  l.replace(nodes[7].get(), &stand_in);
  EXPECT_TRUE(found(&stand_in));
  EXPECT_EQ(l.find(stand_in.key[0], [&](const radix_node* c) { return c == nodes[7].get(); }),
            nullptr);
  l.replace(&stand_in, nodes[7].get());

  std::vector<radix_node*> left;
  for (std::size_t i = 0; i < n; ++i)
    if (i % 8 != 0) {
      l.remove(nodes[i].get());
    } else {
      left.push_back(nodes[i].get());
    }
  ASSERT_EQ(l.size(), left.size());
  EXPECT_FALSE(l.indexed()) << "below half the threshold";
  for (std::size_t i = 0; i < l.size(); ++i)
    EXPECT_EQ(l[i]->child_index, i);
  for (radix_node* x : left)
    EXPECT_TRUE(found(x)) << x->key[1];
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 8 != 0) {
      EXPECT_EQ(l.find(nodes[i]->key[0], [&](const radix_node* c) { return c == nodes[i].get(); }),
                nullptr);
    }
  }
}

// ---- lru_list ---------------------------------------------------------------------------

/// A chain root -> a -> b -> c and a sibling d under a (nodes owned here, not by a tree).
struct lru_nodes : ::testing::Test {
  radix_node root, a, b, c, d;
  lru_list<lru_kind::full> full;
  lru_list<lru_kind::mamba> mamba;
  void SetUp() override {
    a.parent = &root;
    b.parent = &a;
    c.parent = &b;
    d.parent = &a;
    root.children = {&a};
    a.children = {&b, &d};
    b.children = {&c};
  }
  template <class L>
  static std::vector<const radix_node*> order(const L& l) {  // most to least recent
    std::vector<const radix_node*> v;
    for (radix_node* n = l.first(); n; n = l.after(n))
      v.push_back(n);
    return v;
  }
};

TEST_F(lru_nodes, InsertAndResetMoveToTheMostRecentEnd) {
  for (radix_node* n : {&a, &b, &c, &d})
    full.insert_mru(n);
  EXPECT_EQ(order(full), (std::vector<const radix_node*>{&d, &c, &b, &a}));
  full.reset_mru(&a);
  EXPECT_EQ(order(full), (std::vector<const radix_node*>{&a, &d, &c, &b}));
  full.remove(&d);
  EXPECT_FALSE(full.contains(&d));
  EXPECT_EQ(full.size(), 3u);
  EXPECT_TRUE(mamba.size() == 0 && !mamba.contains(&a)) << "the lists are independent";
}

TEST_F(lru_nodes, ANodeAndItsParentsBecomeMostRecentDescendantsFirst) {
  for (radix_node* n : {&a, &b, &c, &d})
    full.insert_mru(n);
  full.reset_node_and_parents_mru(&c, &root);
  EXPECT_EQ(order(full), (std::vector<const radix_node*>{&c, &b, &a, &d}))
      << "ancestors are less recent than their descendants";
  mamba.insert_mru(&a);
  mamba.insert_mru(&c);  // b is a tombstone: not in the mamba list
  mamba.reset_node_and_parents_mru(&c, &root);
  EXPECT_EQ(order(mamba), (std::vector<const radix_node*>{&c, &a}));
}

TEST_F(lru_nodes, TheLeastRecentUnlockedNodeAndLeafSkipLocksAndDeviceChildren) {
  for (radix_node* n : {&c, &d, &b, &a})  // a is the most recent, c the least
    full.insert_mru(n);
  c.full_lock_ref = 1;
  EXPECT_EQ(full.lru_unlocked(), &d);
  // c and d are on the device (not evicted): a and b have device children, no D-leaves
  EXPECT_EQ(full.lru_unlocked_leaf(), &d);
  EXPECT_EQ(full.prev_unlocked_leaf(&d), nullptr) << "b and a have device children";
  c.full_lock_ref = 0;
  EXPECT_EQ(full.lru_unlocked(), &c);
  mamba.insert_mru(&b);
  b.mamba_lock_ref = 1;
  EXPECT_EQ(mamba.lru_unlocked(), nullptr) << "each list has its own lock";
}

// ---- kv events ----------------------------------------------------------------------------

TEST(KvEvents, ABlockHashIsTheDigestsFirstEightBytesAsASignedBigEndianInteger) {
  page_digest d;
  for (std::size_t i = 0; i < d.bytes.size(); ++i)
    d.bytes[i] = static_cast<std::uint8_t>(0xf0 + (i % 16));
  // f0 f1 f2 f3 f4 f5 f6 f7 -> 0xf0f1f2f3f4f5f6f7 as two's complement
  EXPECT_EQ(block_hash_of(d), static_cast<std::int64_t>(0xf0f1f2f3f4f5f6f7ull));
  d.bytes[0] = 0x01;
  EXPECT_EQ(block_hash_of(d), 0x01f1f2f3f4f5f6f7ll);
}

TEST(KvEvents, OneStoredEventPerPageChainedToThePreviousPage) {
  sha256_page_hasher hasher;
  cache_config cfg;
  cfg.kv_tokens = 64;
  cfg.page_size = 4;
  cfg.slots = 4;
  cfg.enable_events = true;
  radix_cache cache(cfg, &hasher);
  radix_tree& t = cache.tree();
  const auto key = iota_tokens(10, 12);
  std::vector<slot_id> slot;
  ASSERT_TRUE(cache.slots().alloc(1, slot));
  HC_ASSERT_OK(t.insert(0, key, alloc_kv(cache, 12), slot[0]));
  const auto ev = t.drain_events();
  ASSERT_EQ(ev.size(), 3u);
  page_digest prior{};
  for (std::size_t p = 0; p < 3; ++p) {
    const std::span<const token_id> page(key.data() + 4 * p, 4);
    const page_digest d = hasher.hash_page(p ? &prior : nullptr, page);
    EXPECT_EQ(ev[p].type, kv_event::kind::block_stored);
    EXPECT_EQ(ev[p].block_hash, block_hash_of(d));
    EXPECT_EQ(ev[p].block_size, 4u);
    EXPECT_EQ(ev[p].token_ids, std::vector<token_id>(page.begin(), page.end()));
    if (p == 0) {
      EXPECT_FALSE(ev[p].parent_block_hash.has_value());
    } else {
      EXPECT_EQ(ev[p].parent_block_hash, block_hash_of(prior));
    }
    prior = d;
  }
  EXPECT_TRUE(t.drain_events().empty()) << "drained";
}

// ---- radix_tree ---------------------------------------------------------------------------

struct tree : ::testing::Test {
  radix_cache cache{{256, 1, 8, 4}};
  radix_tree& t = cache.tree();
  slot_id slot() {
    std::vector<slot_id> s;
    EXPECT_TRUE(cache.slots().alloc(1, s));
    return s.empty() ? no_slot : s[0];
  }
  void insert(const std::vector<token_id>& key) {
    HC_ASSERT_OK(t.insert(0, key, alloc_kv(cache, key.size()), slot()));
    HC_ASSERT_OK(t.check_invariants());
  }
};

TEST_F(tree, ASharedStemSplitsAndEachBranchMatchesToItsState) {
  insert(toks({1, 2, 3, 4, 5, 6}));
  insert(toks({1, 2, 3, 9}));
  EXPECT_EQ(t.node_count(), 3u) << "stem [1 2 3] split off, two branches";
  EXPECT_EQ(t.leaf_count(), 2u);
  const match_result m = t.match(0, toks({1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(m.indices.size(), 6u);
  EXPECT_NE(m.last_slot, no_slot);
  const match_result stem = t.match(0, toks({1, 2, 3, 7}));
  EXPECT_EQ(stem.kv_matched, 3u);
  EXPECT_EQ(stem.indices.size(), 0u) << "the split-off stem is a tombstone: no state";
  EXPECT_EQ(stem.last_node.node, t.root().node);
  HC_ASSERT_OK(t.check_invariants());
}

TEST_F(tree, AnInsertOfACachedPrefixFreesTheCallersDuplicates) {
  insert(toks({1, 2, 3, 4}));
  const std::size_t free_before = cache.kv().available();
  auto kv = alloc_kv(cache, 4);
  const slot_id s = slot();
  auto r = t.insert(0, toks({1, 2, 3, 4}), kv, s);
  HC_ASSERT_OK(r);
  EXPECT_TRUE(r->mamba_exist) << "the node already has a state";
  EXPECT_EQ(cache.kv().available(), free_before) << "the 4 duplicate ids were freed";
  HC_ASSERT_OK(cache.slots().free_one(s));  // the caller keeps its slot when a state exists
  HC_ASSERT_OK(t.check_invariants());
}

TEST_F(tree, EvictionTakesTheLeastRecentUnlockedLeafFirst) {
  insert(toks({1, 2}));
  insert(toks({3, 4}));
  insert(toks({5, 6}));
  (void)t.match(0, toks({1, 2}));  // now the most recent
  const match_result locked = t.match(0, toks({3, 4}));
  HC_ASSERT_OK(t.inc_lock(locked.last_node));
  const evict_result r = t.evict(2, 0);
  EXPECT_EQ(r.tokens_freed_total, 2u);
  EXPECT_EQ(t.match(0, toks({5, 6})).kv_matched, 0u) << "[5 6] was the least recent";
  EXPECT_EQ(t.match(0, toks({1, 2})).kv_matched, 2u);
  EXPECT_EQ(t.match(0, toks({3, 4})).kv_matched, 2u) << "locked: never evicted";
  HC_ASSERT_OK(t.dec_lock(locked.last_node));
  HC_ASSERT_OK(t.sanity_check());
}

// A node whose ids are one run keeps only the run's first id (its match writes the ids, its
// eviction frees the run unread); other ids are kept as they are. The invariant check
// catches stored ids that are wrong.
TEST_F(tree, ANodeWhoseIdsAreOneRunKeepsTheRun) {
  insert(toks({1, 2, 3, 4}));
  radix_node* run_leaf = t.match(0, toks({1, 2, 3, 4})).last_node.node;
  ASSERT_NE(run_leaf, nullptr);
  const std::vector<kv_index> run_ids = run_leaf->value.to_vector();
  EXPECT_EQ(run_leaf->value.run_length(), 4u);
  EXPECT_EQ(run_leaf->value.stored().size(), 1u);
  EXPECT_EQ(t.match(0, toks({1, 2, 3, 4})).indices, run_ids);
  std::vector<kv_index> ids = alloc_kv(cache, 3);
  std::swap(ids[0], ids[1]);
  HC_ASSERT_OK(t.insert(0, toks({7, 8, 9}), ids, slot()));
  const radix_node* listed = t.match(0, toks({7, 8, 9})).last_node.node;
  EXPECT_EQ(listed->value.run_length(), 0u);
  EXPECT_EQ(listed->value.to_vector(), ids);
  HC_ASSERT_OK(t.check_invariants());
  run_leaf->value.stored_for_test()[0] += 1;  // the run now ends on another node's id
  const status bad = t.check_invariants();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.err().message.find("held by two nodes"), std::string::npos) << bad.err().message;
  run_leaf->value.stored_for_test()[0] -= 1;
  insert(toks({1, 2, 5, 6}));  // splits the run: a run on either side, the same ids
  const radix_node* tail = t.match(0, toks({1, 2, 3, 4})).last_node.node;
  ASSERT_EQ(tail->key, toks({3, 4}));
  EXPECT_EQ(tail->value.run_length(), 2u);
  EXPECT_EQ(tail->parent->value.run_length(), 2u) << "the split-off stem [1 2]";
  EXPECT_EQ(t.match(0, toks({1, 2, 3, 4})).indices, run_ids);
  HC_ASSERT_OK(t.sanity_check());
}

// Page-1 ids of several runs (allocations that interleaved) are kept encoded — a run as
// two entries, a lone id as one — when that saves a quarter; every position reads and
// splits as the list does, and a half that is one run takes the runs form.
TEST(NodeKv, SeveralRunsAreEncodedAndSplitAnywhere) {
  std::vector<kv_index> ids = ids_from(100, 139);  // 40, then a lone id, then 25, then 30
  ids.push_back(7);
  for (kv_index i = 300; i < 325; ++i)
    ids.push_back(i);
  for (kv_index i = 50; i < 80; ++i)
    ids.push_back(i);
  node_kv v;
  ASSERT_TRUE(v.assign_encoded(ids));
  EXPECT_TRUE(v.encoded());
  EXPECT_EQ(v.stored().size(), 7u) << "three runs of two entries, one lone id";
  expect_ids(v, ids);
  std::vector<std::pair<kv_index, std::size_t>> runs;
  v.for_each_run([&runs](kv_index f, std::size_t k) { runs.emplace_back(f, k); });
  EXPECT_EQ(runs, (std::vector<std::pair<kv_index, std::size_t>>{
                      {100, 40}, {7, 1}, {300, 25}, {50, 30}}));
  for (std::size_t at = 1; at < ids.size(); ++at) {
    node_kv back;
    ASSERT_TRUE(back.assign_encoded(ids));
    node_kv front = back.split_front(at);
    expect_ids(front,
               std::vector<kv_index>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(at)));
    expect_ids(back,
               std::vector<kv_index>(ids.begin() + static_cast<std::ptrdiff_t>(at), ids.end()));
    if (at <= 40) {
      EXPECT_EQ(front.run_length(), at) << "one run: the runs form";
    }
    if (at >= 66) {
      EXPECT_EQ(back.run_length(), ids.size() - at) << "one run: the runs form";
    }
  }
  node_kv refused;
  refused.assign(ids_from(1, 3));
  EXPECT_FALSE(refused.assign_encoded(std::vector<kv_index>{1, 3, 5, 7, 9, 11, 13, 15}))
      << "lone ids save nothing";
  EXPECT_FALSE(refused.assign_encoded(std::vector<kv_index>{-4, -3, -2, -1, 0, 1, 2, 3}))
      << "ids that are not positive have no encoding";
  expect_ids(refused, ids_from(1, 3));  // unchanged
}

// ---- differential tests: two trees, the same random requests, old call vs new call ----

/// A small LCG: the random requests are the same on every platform.
struct lcg {
  std::uint64_t state;
  std::uint64_t operator()(std::uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  }
};

/// A key of 1-6 pages over a 3-token alphabet behind one of 3 two-page stems: shared stems,
/// splits, duplicates.
std::vector<token_id> random_key(lcg& next, std::size_t page) {
  const std::size_t pages = 1 + next(6);
  const auto stem = static_cast<token_id>(next(3));
  std::vector<token_id> key;
  for (std::size_t i = 0; i < pages * page; ++i)
    key.push_back(i < 2 * page ? stem : static_cast<token_id>(next(3)));
  return key;
}

/// The same eviction on both trees when either pool runs low.
void keep_pools_open(radix_cache& a, radix_cache& b) {
  if (a.kv().available() < 512 || a.slots().available() < 4) {
    (void)a.tree().evict(2048, 16);
    (void)b.tree().evict(2048, 16);
  }
}

/// Both LRU orders, every node's recency stamp and insert hits, and the backup candidates.
void expect_same_recency(radix_tree& a, radix_tree& b, int step) {
  const auto ids_of = [](const std::vector<const radix_node*>& nodes) {
    std::vector<std::uint64_t> v;
    for (const radix_node* n : nodes)
      v.insert(v.end(), {n->id, n->last_access, n->hit_count});
    return v;
  };
  for (lru_kind k : {lru_kind::full, lru_kind::mamba})
    ASSERT_EQ(ids_of(b.lru_order(k)), ids_of(a.lru_order(k))) << "step " << step;
  std::vector<std::uint64_t> cand_a, cand_b;
  for (node_ref r : a.take_backup_candidates())
    cand_a.push_back(r.id);
  for (node_ref r : b.take_backup_candidates())
    cand_b.push_back(r.id);
  ASSERT_EQ(cand_b, cand_a) << "step " << step;
}

// match_inserted answers what match() of the key just inserted would, without the walk: one
// tree re-matches each inserted key, the other calls match_inserted — results, the ids past
// `from`, both LRU orders and the recency stamps must be the same.
class MatchInserted : public ::testing::TestWithParam<std::size_t> {};

TEST_P(MatchInserted, AnswersAsAReMatchOfTheInsertedKeyDoes) {
  const std::size_t page = GetParam();
  const cache_config cfg{8192, page, 64, 4 * page};
  radix_cache a(cfg), b(cfg);
  lcg next{7};
  for (int step = 0; step < 400; ++step) {
    keep_pools_open(a, b);
    const std::vector<token_id> key = random_key(next, page);
    // A prefix the caller already holds (its protected length).
    const std::size_t from = next(key.size() / page + 1) * page;
    std::vector<kv_index> kv_a, kv_b;
    ASSERT_TRUE(a.kv().alloc_extend(0, 0, key.size(), kv_a));
    ASSERT_TRUE(b.kv().alloc_extend(0, 0, key.size(), kv_b));
    ASSERT_EQ(kv_a, kv_b);
    std::vector<slot_id> sa, sb;
    ASSERT_TRUE(a.slots().alloc(1, sa));
    ASSERT_TRUE(b.slots().alloc(1, sb));
    auto ia = a.tree().insert(0, key, kv_a, sa[0]);
    auto ib = b.tree().insert(0, key, kv_b, sb[0]);
    HC_ASSERT_OK(ia);
    HC_ASSERT_OK(ib);
    if (ia->mamba_exist) HC_ASSERT_OK(a.slots().free_one(sa[0]));
    if (ib->mamba_exist) HC_ASSERT_OK(b.slots().free_one(sb[0]));

    const match_result want = a.tree().match(0, key);
    std::vector<kv_index> row(key.size() + 3, -7);
    const inserted_match got = b.tree().match_inserted(*ib, row, from);
    ASSERT_EQ(got.prefix_len, want.indices.size()) << "step " << step;
    EXPECT_TRUE(got.match.indices.empty());
    for (std::size_t i = 0; i < row.size(); ++i)
      ASSERT_EQ(row[i], i >= from && i < want.indices.size() ? want.indices[i] : -7)
          << "step " << step << " position " << i;
    EXPECT_EQ(got.match.last_node.id, want.last_node.id);
    EXPECT_EQ(got.match.best.id, want.best.id);
    EXPECT_EQ(got.match.last_host_node.id, want.last_host_node.id);
    EXPECT_EQ(got.match.last_slot, want.last_slot);
    EXPECT_EQ(got.match.kv_matched, want.kv_matched);
    EXPECT_EQ(got.match.branching, want.branching);
    expect_same_recency(a.tree(), b.tree(), step);
    if (next(3) == 0) {  // mamba evictions leave tombstones on later paths
      (void)a.tree().evict(0, 1);
      (void)b.tree().evict(0, 1);
    }
    HC_ASSERT_OK(b.tree().check_invariants());
  }
  EXPECT_EQ(b.kv().available(), a.kv().available());
}

INSTANTIATE_TEST_SUITE_P(Pages, MatchInserted, ::testing::Values(1, 4),
                         [](const auto& i) { return "page" + std::to_string(i.param); });

// insert's known_prefix walks a locked match without comparing it: both trees take the same
// random requests (match a prefix, lock it, insert the longer key with the matched ids in
// front), one compares the whole key, the other passes the locked node — results, duplicate
// ids, LRU orders, recency stamps and insert hits (host tier, selective write-through)
// must be the same.
struct known_prefix_case {
  std::size_t page;
  bool host_tier;
};
void PrintTo(const known_prefix_case& c, std::ostream* os) {
  *os << "page " << c.page << (c.host_tier ? ", host tier" : "");
}

class KnownPrefix : public ::testing::TestWithParam<known_prefix_case> {};

TEST_P(KnownPrefix, InsertsAsTheComparedWalkDoes) {
  const auto [page, host] = GetParam();
  cache_config cfg{8192, page, 64, 4 * page};
  if (host) {
    cfg.host_kv_tokens = 16384;
    cfg.host_slots = 64;
    cfg.host_tier.policy = write_policy::write_through_selective;
  }
  radix_cache a(cfg), b(cfg);
  lcg next{11};
  std::size_t anchored = 0;
  for (int step = 0; step < 400; ++step) {
    keep_pools_open(a, b);
    const std::vector<token_id> key = random_key(next, page);
    // The request's match (of a page-aligned prefix, as SGLang matches input_len - 1) and lock.
    const std::span<const token_id> prompt(key.data(), next(key.size() / page + 1) * page);
    const match_result ma = a.tree().match(0, prompt);
    const match_result mb = b.tree().match(0, prompt);
    ASSERT_EQ(ma.indices, mb.indices);
    HC_ASSERT_OK(a.tree().inc_lock(ma.last_node));
    HC_ASSERT_OK(b.tree().inc_lock(mb.last_node));
    const std::size_t prev = ma.indices.size();
    std::vector<kv_index> fresh_a, fresh_b;
    ASSERT_TRUE(a.kv().alloc_extend(0, 0, key.size() - prev, fresh_a));
    ASSERT_TRUE(b.kv().alloc_extend(0, 0, key.size() - prev, fresh_b));
    std::vector<kv_index> row = ma.indices;
    row.insert(row.end(), fresh_a.begin(), fresh_a.end());
    std::vector<slot_id> sa, sb;
    ASSERT_TRUE(a.slots().alloc(1, sa));
    ASSERT_TRUE(b.slots().alloc(1, sb));
    std::vector<kv_index> dups_a, dups_b;
    auto ia = a.tree().insert(0, key, row, sa[0], prev, &dups_a);
    auto ib = b.tree().insert(0, key, row, sb[0], prev, &dups_b, mb.last_node);
    HC_ASSERT_OK(ia);
    HC_ASSERT_OK(ib);
    anchored += prev > 0 ? 1 : 0;
    EXPECT_EQ(ib->prefix_len, ia->prefix_len) << "step " << step;
    EXPECT_EQ(ib->mamba_exist, ia->mamba_exist);
    EXPECT_EQ(ib->node.id, ia->node.id);
    ASSERT_EQ(dups_b, dups_a) << "step " << step;
    HC_ASSERT_OK(a.kv().free(dups_a));
    HC_ASSERT_OK(b.kv().free(dups_b));
    if (ia->mamba_exist) HC_ASSERT_OK(a.slots().free_one(sa[0]));
    if (ib->mamba_exist) HC_ASSERT_OK(b.slots().free_one(sb[0]));
    expect_same_recency(a.tree(), b.tree(), step);
    HC_ASSERT_OK(a.tree().dec_lock(ma.last_node));
    HC_ASSERT_OK(b.tree().dec_lock(mb.last_node));
    if (next(3) == 0) {
      (void)a.tree().evict(0, 1);
      (void)b.tree().evict(0, 1);
    }
    HC_ASSERT_OK(b.tree().check_invariants());
  }
  EXPECT_GT(anchored, 100u) << "most requests had a locked prefix to walk";
  EXPECT_EQ(b.kv().available(), a.kv().available());
}

INSTANTIATE_TEST_SUITE_P(Trees, KnownPrefix,
                         ::testing::Values(known_prefix_case{1, false}, known_prefix_case{4, false},
                                           known_prefix_case{1, true}, known_prefix_case{4, true}),
                         [](const auto& i) {
                           return "page" + std::to_string(i.param.page) +
                                  (i.param.host_tier ? "_host" : "");
                         });

// A wide node (more children than one block of find_child's scan): at page 2 children that
// share a first token differ in the second, and a namespace's children are not another's.
TEST(WideNode, EveryChildIsFoundByItsFirstPageAndNamespace) {
  radix_cache cache{{4096, 2, 1024, 4}};
  radix_tree& t = cache.tree();
  std::vector<std::vector<token_id>> keys;
  for (token_id first = 1; first <= 300; ++first)  // 300 first tokens x 2 second tokens
    for (token_id second : {1000, 2000})
      keys.push_back({first, second, first, second});
  std::vector<slot_id> s;
  for (namespace_id ns : {0u, 1u})
    for (std::size_t k = 0; k < keys.size(); ++k) {
      if (ns == 1 && k % 3 != 0) continue;  // namespace 1 holds every third key only
      s.clear();
      ASSERT_TRUE(cache.slots().alloc(1, s));
      HC_ASSERT_OK(t.insert(ns, keys[k], alloc_kv(cache, 4), s[0]));
    }
  HC_ASSERT_OK(t.check_invariants());
  EXPECT_EQ(t.root().node->children.size(), 600u + 200u);
  EXPECT_TRUE(t.root().node->children.indexed()) << "wide enough for the hash index";
  for (namespace_id ns : {0u, 1u})
    for (std::size_t k = 0; k < keys.size(); ++k) {
      const match_result m = t.match(ns, keys[k]);
      const bool held = ns == 0 || k % 3 == 0;
      EXPECT_EQ(m.kv_matched, held ? 4u : 0u) << "namespace " << ns << " key " << k;
      if (held) {
        EXPECT_EQ(m.last_node.node->key, keys[k]);
      }
    }
  EXPECT_EQ(t.match(0, toks({301, 1000, 301, 1000})).kv_matched, 0u) << "no such first token";
  EXPECT_EQ(t.match(0, toks({5, 3000, 5, 3000})).kv_matched, 0u) << "first token, other page";
  // Evicted down to a narrow list (the index dropped), every remaining child still found.
  (void)t.evict(4 * 600, 0);
  HC_ASSERT_OK(t.check_invariants());
  EXPECT_EQ(t.root().node->children.size(), 200u);
  EXPECT_FALSE(t.root().node->children.indexed());
}

// ---- instance_stats ---------------------------------------------------------------------

TEST(InstanceStats, PlusEqualsSumsEveryFieldAndEveryFieldHasUniqueNames) {
  instance_stats a, b;
  std::uint64_t i = 0;
  std::set<std::string> stats_names, inspect_names;
  instance_stats::for_each_field([&](std::string_view name, std::string_view inspect_name,
                                     std::uint64_t instance_stats::*f, bool) {
    ++i;
    a.*f = i;
    b.*f = 10 * i;
    EXPECT_TRUE(stats_names.insert(std::string(name)).second) << name;
    if (!inspect_name.empty())  // "" = reported by inspect's host part, not from here
      EXPECT_TRUE(inspect_names.insert(std::string(inspect_name)).second) << inspect_name;
  });
  EXPECT_EQ(i * sizeof(std::uint64_t), sizeof(instance_stats)) << "a field is not listed";
  a += b;
  i = 0;
  instance_stats::for_each_field(
      [&](std::string_view name, std::string_view, std::uint64_t instance_stats::*f, bool) {
        ++i;
        EXPECT_EQ(a.*f, 11 * i) << name;
      });
}

}  // namespace
}  // namespace hc::test
