// The node's budget of tokens held by live requests (token_budget, request_config::
// live_tokens): create and append take from it and are refused past its limit with
// out_of_memory naming the flag; finish, abort and a dropped session give the tokens back;
// sessions share one budget.
#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "actors/scheduler/command_executor.hpp"
#include "actors/scheduler/instance_config.hpp"
#include "actors/scheduler/token_budget.hpp"
#include "tests/support/commands.hpp"

namespace hc::test {
namespace {

TEST(TokenBudget, TakesUpToItsLimitAndNothingPastIt) {
  token_budget b(10);
  EXPECT_TRUE(b.take(4));
  EXPECT_TRUE(b.take(6));
  EXPECT_EQ(b.held(), 10u);
  EXPECT_FALSE(b.take(1));
  EXPECT_FALSE(b.take(~std::uint64_t{0})) << "no wrap-around";
  EXPECT_EQ(b.held(), 10u) << "a refused take takes nothing";
  b.give(4);
  EXPECT_TRUE(b.take(3));
  EXPECT_EQ(b.held(), 9u);
  token_budget unlimited(0);
  EXPECT_TRUE(unlimited.take(std::uint64_t{1} << 60));
  EXPECT_EQ(unlimited.held(), std::uint64_t{1} << 60) << "counted all the same";
}

std::vector<token_id> tokens(std::size_t n) {
  std::vector<token_id> t(n);
  std::iota(t.begin(), t.end(), 1);
  return t;
}

/// A session's request table on a small instance, sharing `budget`.
struct session {
  explicit session(std::shared_ptr<token_budget> budget) : cache(cache_config_of(spec())) {
    request_config rc = request_config_of(spec());
    rc.live_tokens = std::move(budget);
    requests = std::make_unique<request_manager>(rc, cache);
  }
  static instance_spec spec() {
    instance_spec s;
    s.model_id = "budget";
    s.kv_tokens = 1024;
    s.ssm_slots = 16;
    s.request_rows = 8;
    return s;
  }
  /// The results of running `cmds` as one batch.
  std::vector<command_result> run(std::vector<command> cmds) {
    std::vector<command_result> out;
    execute_batch(*requests, cache, cmds, out, {});
    return out;
  }
  radix_cache cache;
  std::unique_ptr<request_manager> requests;
};

constexpr std::uint64_t rec = request_record_tokens;  // each request's own bookkeeping

TEST(TokenBudget, CreateAndAppendPastTheLimitAreRefusedAndTheRestGoesOn) {
  auto budget = std::make_shared<token_budget>(100 + 2 * rec);
  session s(budget);
  auto r = s.run({create(1, tokens(60)), create(2, tokens(41)), create(3, tokens(40)),
                  cmd::append{3, {1}, {}}, cmd::append{1, {7}, {}}});
  ASSERT_EQ(r.size(), 5u);
  EXPECT_TRUE(r[0].ok()) << r[0].error;
  ASSERT_FALSE(r[1].ok());
  EXPECT_EQ(r[1].code, errc::out_of_memory);
  EXPECT_NE(r[1].error.find("--max-request-tokens"), std::string::npos) << r[1].error;
  EXPECT_NE(r[1].error.find(std::to_string(60 + rec) + " of " + std::to_string(100 + 2 * rec)),
            std::string::npos)
      << r[1].error;
  EXPECT_TRUE(r[2].ok()) << "a smaller one still fits: " << r[2].error;
  EXPECT_FALSE(r[3].ok()) << "the budget is full";
  EXPECT_EQ(r[3].code, errc::out_of_memory);
  EXPECT_FALSE(r[4].ok());
  EXPECT_EQ(budget->held(), 100 + 2 * rec);
  auto again = s.run({create(2, tokens(1))});
  EXPECT_FALSE(again[0].ok()) << "request 2 was never created, and there is no room for it";
}

TEST(TokenBudget, ManyTinyRequestsAreBoundedByTheirBookkeeping) {
  auto budget = std::make_shared<token_budget>(10 * (1 + rec));
  session s(budget);
  std::vector<command> cmds;
  for (request_handle h = 1; h <= 11; ++h)
    cmds.push_back(create(h, tokens(1)));
  auto r = s.run(cmds);
  for (std::size_t i = 0; i < 10; ++i)
    EXPECT_TRUE(r[i].ok()) << r[i].error;
  EXPECT_EQ(r[10].code, errc::out_of_memory) << "one-token requests cost their record too";
}

TEST(TokenBudget, FinishAbortAndADroppedSessionGiveTheTokensBack) {
  auto budget = std::make_shared<token_budget>(1000);
  {
    session s(budget);
    auto r = s.run({create(1, tokens(8)), cmd::match{1}, cmd::alloc_req{1}, cmd::alloc_kv{1, 0, 8},
                    cmd::append{1, {9, 10}, {}}, create(2, tokens(30)), create(3, tokens(50))});
    for (const auto& one : r)
      ASSERT_TRUE(one.ok()) << one.error;
    EXPECT_EQ(budget->held(), 90 + 3 * rec);
    r = s.run({cmd::finish{1}});
    ASSERT_TRUE(r[0].ok()) << r[0].error;
    EXPECT_EQ(budget->held(), 80 + 2 * rec) << "the prompt and the appended tokens";
    r = s.run({cmd::abort{2}});
    ASSERT_TRUE(r[0].ok()) << r[0].error;
    EXPECT_EQ(budget->held(), 50 + rec);
    r = s.run({cmd::abort{9}});  // an unknown request gives nothing back
    EXPECT_FALSE(r[0].ok());
    EXPECT_EQ(budget->held(), 50 + rec);
  }
  EXPECT_EQ(budget->held(), 0u) << "the session's table was dropped with request 3 in it";
}

TEST(TokenBudget, SessionsShareOneBudget) {
  auto budget = std::make_shared<token_budget>(150);
  session a(budget), b(budget);
  EXPECT_TRUE(a.run({create(1, tokens(70))})[0].ok());
  auto r = b.run({create(1, tokens(40))});
  ASSERT_FALSE(r[0].ok()) << "a's request holds 70 + its record of the node's 150";
  EXPECT_EQ(r[0].code, errc::out_of_memory);
  EXPECT_TRUE(a.run({cmd::abort{1}})[0].ok());
  EXPECT_TRUE(b.run({create(1, tokens(40))})[0].ok());
  EXPECT_EQ(budget->held(), 40 + rec);
}

}  // namespace
}  // namespace hc::test
