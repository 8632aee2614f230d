// What a step hands to the L1 stream (step.hpp), as tables: each row is one session's step
// and the outcome it must produce — ops per batch, read_after marks, donations — with the
// node's session settings (donations out of the forward ops). No CAF, no clock.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "actors/scheduler/step.hpp"
#include "tests/support/commands.hpp"
#include "tests/support/tree_fixture.hpp"

namespace hc::test {
namespace {

/// "ops b<batch>:<snapshots>s<clears>c<cows>w; ...; after <s>.<b> ...; donate <n>", or "-".
std::string render(const step_outcome& o) {
  std::string t;
  auto add = [&t](const std::string& part) { t += (t.empty() ? "" : "; ") + part; };
  for (const auto& b : o.ops)
    add("ops b" + std::to_string(b.batch) + ":" + std::to_string(b.ops.snapshots.size()) + "s" +
        std::to_string(b.ops.clears.size()) + "c" + std::to_string(b.ops.cows.size()) + "w");
  for (const writer_mark& w : o.read_after)
    add("after " + std::to_string(w.session) + "." + std::to_string(w.batch));
  if (!o.donations.snapshots.empty()) add("donate " + std::to_string(o.donations.snapshots.size()));
  return t.empty() ? "-" : t;
}

struct row {
  session_id session;
  std::vector<command> cmds;
  std::string outcome;
  /// Fence reports the stream sends after the step: {batch, ended}.
  std::vector<std::pair<std::uint64_t, bool>> fences = {};
};

/// Sessions 1 and 2 of one no_buffer instance (chunk 64, page 1), set up as the node does.
class sessions {
 public:
  explicit sessions(strategy st = strategy::no_buffer) {
    for (session_id s : {1, 2}) {
      request_config rc;
      rc.strat = st;
      rc.chunk_size = 64;
      rc.rows = 4;
      rc.session = s;
      rc.snapshots_in_forward_ops = false;
      m_[s - 1] = std::make_unique<request_manager>(rc, cache_);
    }
  }
  void run(const std::vector<row>& rows) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const row& r = rows[i];
      request_manager& m = *m_[r.session - 1];
      std::vector<command_result> res;
      const step_outcome o = run_step(m, cache_, r.cmds, res);
      for (std::size_t k = 0; k < res.size(); ++k)
        EXPECT_TRUE(res[k].ok()) << "row " << i + 1 << " command " << k << ": " << res[k].error;
      EXPECT_EQ(render(o), r.outcome) << "row " << i + 1;
      for (auto [batch, ended] : r.fences)
        ended ? m.stream_ended(batch) : m.stream_claimed(batch);
    }
  }

 private:
  radix_cache cache_{{1024, 1, 16, 64}};
  std::unique_ptr<request_manager> m_[2];
};

/// A request's admission: its prompt (300 tokens from 0), match, lock, row, `n` tokens.
std::vector<command> admit(request_handle h, std::size_t n) {
  return {create(h, iota_tokens(0, 300)), cmd::match{h}, cmd::lock{h}, cmd::alloc_req{h},
          cmd::alloc_kv{h, 0, n}};
}
std::vector<command> operator+(std::vector<command> a, const std::vector<command>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(Step, ANewRequestsOpsClearItsWorkingSlotForItsBatch) {
  sessions{}.run({
      {1, admit(1, 128) + std::vector{take_ops({1}, 1)}, "ops b1:0s1c0w"},
      {1, {take_ops({1}, 2)}, "-"},  // taken once
      {1, {}, "-"},
  });
}

TEST(Step, NoBufferDonatesACopyWhileTheRequestRunsAndItsSlotAtTheFinish) {
  sessions{}.run({
      {1, admit(1, 300) + std::vector{take_ops({1}, 1)}, "ops b1:0s1c0w", {{1, false}}},
      // cache_unfinished: the request keeps its working slot, the tree gets a copy of it
      {1, {cmd::cache_unfinished{1, 128}}, "donate 1", {{1, true}}},
      // finish: the working slot itself goes to the tree, nothing to copy
      {1, {cmd::finish{1}}, "-"},
  });
}

TEST(Step, AMatchOfAChunkCachedWhileItsForwardRunsWaitsForThatForward) {
  sessions{}.run({
      {1, admit(1, 128) + std::vector{take_ops({1}, 1)}, "ops b1:0s1c0w", {{1, false}}},
      {1, {cmd::cache_unfinished{1, 128}}, "donate 1"},
      {2, {create(2, iota_tokens(0, 300)), cmd::match{2}}, "after 1.1"},
      {1, {}, "-", {{1, true}}},
      {2, {create(3, iota_tokens(0, 300)), cmd::match{3}}, "-"},  // it ended
  });
}

TEST(Step, TheOpsOfEachTakeOpsKeepTheirOwnBatchInCommandOrder) {
  sessions{}.run({
      {1, admit(1, 64) + admit(2, 64) + std::vector{take_ops({1}, 1), take_ops({2}, 2)},
       "ops b1:0s1c0w; ops b2:0s1c0w"},
  });
}

}  // namespace
}  // namespace hc::test
