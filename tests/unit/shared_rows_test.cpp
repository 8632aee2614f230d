// Shared request rows (request_config::shared_rows, InstanceSpec.sharedRows) and
// alloc_kv's to_end form. Two twins run the same steps on caches of the same config: one
// with private rows (results carry the index lists), one with shared rows. After every
// step the shared twin's rows must hold exactly the private twin's row of every admitted
// request, and its results must be the private twin's without the lists.
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "actors/scheduler/command_executor.hpp"
#include "actors/scheduler/instance_config.hpp"
#include "tests/support/commands.hpp"

namespace hc::test {
namespace {

constexpr std::size_t kRows = 4;
constexpr std::size_t kWidth = 512;

instance_spec twin_spec() {
  instance_spec s;
  s.model_id = "twins";
  s.page_size = 1;
  s.kv_tokens = 2048;
  s.ssm_slots = 32;
  s.chunk_size = 64;
  s.request_rows = kRows;
  s.max_context_len = kWidth;
  return s;
}

struct twin {
  explicit twin(bool shared) {
    request_config rc = request_config_of(twin_spec());
    if (shared) {
      rows.assign((kRows + 1) * kWidth, kv_index{-7});  // what no row may keep
      rc.shared_rows = rows;
    }
    m = std::make_unique<request_manager>(rc, cache);
  }
  std::vector<kv_index> rows;
  radix_cache cache{cache_config_of(twin_spec())};
  std::unique_ptr<request_manager> m;

  std::vector<command_result> step(const std::vector<command>& cmds) {
    std::vector<command_result> res;
    execute_batch(*m, cache, cmds, res, nullptr);
    return res;
  }
  std::span<const kv_index> row(row_id r, std::size_t len) const {
    return {rows.data() + static_cast<std::size_t>(r) * kWidth, len};
  }
};

/// The result as a worker of shared rows gets it: without its index lists.
command_result without_lists(command_result r) {
  r.elapsed_ns = 0;
  if (auto* x = std::get_if<res::match>(&r.body)) x->indices.clear();
  if (auto* x = std::get_if<res::alloc_kv>(&r.body)) x->indices.clear();
  if (auto* x = std::get_if<res::cache_unfinished>(&r.body)) x->prefix.clear();
  return r;
}

class SharedRows : public ::testing::Test {
 protected:
  twin priv{false}, shared{true};

  /// Runs `cmds` on both twins; checks the results and every admitted request's row.
  std::vector<command_result> step(const std::vector<command>& cmds,
                                   const std::vector<request_handle>& live) {
    const std::vector<command_result> p = priv.step(cmds);
    const std::vector<command_result> s = shared.step(cmds);
    EXPECT_EQ(p.size(), s.size());
    for (std::size_t i = 0; i < p.size() && i < s.size(); ++i) {
      EXPECT_TRUE(p[i].ok()) << "command " << i << ": " << p[i].error;
      EXPECT_EQ(without_lists(s[i]), without_lists(p[i])) << "command " << i;
      EXPECT_EQ(without_lists(s[i]).body, s[i].body) << "command " << i << " carries a list";
    }
    for (request_handle h : live) {
      const request_record* r = priv.m->find(h);
      EXPECT_TRUE(r && r->row != no_row) << "request " << h << " is not admitted";
      if (!r || r->row == no_row) continue;
      EXPECT_EQ(shared.m->find(h)->row, r->row);
      const auto in_shm = shared.row(r->row, r->row_kv.size());
      EXPECT_TRUE(std::equal(in_shm.begin(), in_shm.end(), r->row_kv.begin()))
          << "request " << h << ": the shared row differs from the private one";
    }
    return p;
  }
};

std::vector<token_id> tokens(std::size_t n, token_id first) {
  std::vector<token_id> t(n);
  for (std::size_t i = 0; i < n; ++i)
    t[i] = first + static_cast<token_id>(i);
  return t;
}

std::vector<token_id> concat(std::vector<token_id> a, const std::vector<token_id>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST_F(SharedRows, EveryRowChangeReachesTheSharedRowsAndResultsCarryNoLists) {
  const std::vector<token_id> sys = tokens(300, 1);
  // A and B admitted together (B's KV private), then A finishes into the tree.
  step({create(1, sys), create(2, concat(sys, tokens(50, 5000))), cmd::match{1}, cmd::match{2},
        cmd::alloc_req{1}, cmd::alloc_req{2}, cmd::alloc_kv{1, 0, 0, true},
        cmd::alloc_kv{2, 0, 0, true}},
       {1, 2});
  step({cmd::finish{1, 0}}, {2});
  // B's cache_unfinished finds A's nodes: its row switches to the tree's ids (dedup).
  const std::vector<kv_index> before = priv.m->find(2)->row_kv;
  step({cmd::cache_unfinished{2, 320}}, {2});
  EXPECT_NE(priv.m->find(2)->row_kv, before) << "the row did not switch: the test misses it";
  // C starts from the cached prefix: admission writes the matched tree ids into its row.
  const auto r = step({create(3, concat(sys, tokens(40, 9000))), cmd::match{3}, cmd::lock{3},
                       cmd::alloc_req{3}, cmd::alloc_kv{3, 0, 0, true}},
                      {2, 3});
  EXPECT_GT(r[1].as<res::match>().prefix_len, 0u);
  step({cmd::finish{2, 0}, cmd::finish{3, 0}}, {});
}

TEST_F(SharedRows, AllocToEndTakesTheRestOfTheRequestFromItsMatchedPrefix) {
  const std::vector<token_id> sys = tokens(200, 1);
  step({create(1, sys), cmd::match{1}, cmd::alloc_req{1}, cmd::alloc_kv{1, 0, 200}}, {1});
  step({cmd::finish{1, 0}}, {});
  // The same allocation two ways: explicit (start = prefix, count = rest) and to_end.
  twin explicit_twin(false);
  const std::vector<command> admit = {create(2, concat(sys, tokens(60, 7000))), cmd::match{2},
                                      cmd::lock{2}, cmd::alloc_req{2}};
  (void)explicit_twin.step(
      {create(1, sys), cmd::match{1}, cmd::alloc_req{1}, cmd::alloc_kv{1, 0, 200}});
  (void)explicit_twin.step({cmd::finish{1, 0}});
  const auto e = explicit_twin.step(admit);
  ASSERT_TRUE(e[1].ok());
  const std::uint64_t prefix = e[1].as<res::match>().prefix_len;
  ASSERT_GT(prefix, 0u);
  const auto ex = explicit_twin.step({cmd::alloc_kv{2, prefix, 260 - prefix}});
  std::vector<command> one_step = admit;
  one_step.push_back(cmd::alloc_kv{2, 0, 0, true});
  const auto to_end = step(one_step, {2});
  ASSERT_TRUE(ex[0].ok()) << ex[0].error;
  EXPECT_EQ(to_end[4].as<res::alloc_kv>().indices, ex[0].as<res::alloc_kv>().indices);
  EXPECT_EQ(priv.m->find(2)->row_kv.size(), 260u);
  // Nothing left to allocate: an empty extension; before admission: refused.
  const auto again = step({cmd::alloc_kv{2, 0, 0, true}}, {2});
  EXPECT_TRUE(again[0].as<res::alloc_kv>().indices.empty());
  const auto early = priv.step({create(4, sys), cmd::alloc_kv{4, 0, 0, true}});
  EXPECT_EQ(early[1].code, errc::invalid_argument);
}

// A row is max_context_len ids wide: an extension past it is refused before it touches
// the rows (in shared rows it would write into the next request's row), and the request
// keeps what it had; up to the width it goes through.
TEST_F(SharedRows, AnExtensionPastMaxContextLenIsRefusedAndWritesNothing) {
  step({create(1, tokens(kWidth - 8, 1)), cmd::match{1}, cmd::alloc_req{1},
        cmd::alloc_kv{1, 0, 0, true}},
       {1});
  const std::vector<kv_index> rows_before = shared.rows;
  const std::size_t kv_before = shared.cache.kv().available();
  // Counts whose sum with the start wraps past 2^64 too (start + n passed the check).
  constexpr std::size_t huge = std::numeric_limits<std::size_t>::max();
  for (const std::size_t n : {std::size_t{9}, huge - (kWidth - 8) + 10, huge})
    for (twin* t : {&priv, &shared}) {
      const auto r = t->step({cmd::alloc_kv{1, kWidth - 8, n}});
      EXPECT_EQ(r[0].code, errc::invalid_argument) << r[0].error;
      EXPECT_NE(r[0].error.find("exceed max_context_len 512"), std::string::npos) << r[0].error;
      EXPECT_EQ(t->m->find(1)->row_kv.size(), kWidth - 8);
    }
  EXPECT_EQ(shared.rows, rows_before) << "a refused extension wrote into the shared rows";
  EXPECT_EQ(shared.cache.kv().available(), kv_before) << "a refused extension took KV";
  step({cmd::alloc_kv{1, kWidth - 8, 8}}, {1});
  EXPECT_EQ(priv.m->find(1)->row_kv.size(), kWidth);
  step({cmd::append{1, tokens(8, 9000), std::nullopt}, cmd::finish{1, 0}}, {});
}

TEST(SharedRowsSpec, NeedAWidthAndFitTheNodesPoolLimit) {
  instance_spec s = twin_spec();
  s.shared_rows = true;
  EXPECT_TRUE(validate(s).ok());
  EXPECT_EQ(shared_rows_bytes(s), (kRows + 1) * kWidth * sizeof(kv_index));
  s.max_context_len = 0;
  const status no_width = validate(s);
  ASSERT_FALSE(no_width.ok());
  EXPECT_NE(no_width.err().message.find("maxContextLen"), std::string::npos);
  s.max_context_len = std::size_t{1} << 40;
  const status too_big = validate(s);
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.err().message.find("pool limit"), std::string::npos);
  // A manager given rows too small for its config keeps them private (and the lists).
  request_config rc = request_config_of(twin_spec());
  std::vector<kv_index> small(kWidth);
  rc.shared_rows = small;
  radix_cache cache(cache_config_of(twin_spec()));
  request_manager m(rc, cache);
  EXPECT_TRUE(m.index_lists_in_results());
}

}  // namespace
}  // namespace hc::test
