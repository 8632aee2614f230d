// Tokens passed by reference (resolve_shared_tokens, InstanceSpec.sharedTokens): ranges of
// a session's token arena become the commands' token lists, so the step that runs is the
// one the lists would have made; a bad range refuses the whole step and changes nothing.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "actors/scheduler/command_executor.hpp"
#include "actors/scheduler/instance_config.hpp"
#include "actors/scheduler/shared_tokens.hpp"
#include "tests/support/commands.hpp"

namespace hc::test {
namespace {

std::vector<token_id> arena_of(std::size_t n) {
  std::vector<token_id> a(n);
  std::iota(a.begin(), a.end(), 100);
  return a;
}

TEST(SharedTokens, RangesBecomeTheCommandsTokens) {
  const std::vector<token_id> arena = arena_of(64);
  std::vector<command> cmds{cmd::create{1, 0, {}, cmd::token_range{8, 5}},
                            cmd::match{1},
                            cmd::append{1, {}, cmd::token_range{60, 4}},
                            cmd::create{2, 0, {7, 8}, {}},
                            cmd::create{3, 0, {}, cmd::token_range{0, 0}},
                            cmd::lookup{0, {}, true, cmd::token_range{10, 3}}};
  ASSERT_TRUE(resolve_shared_tokens(cmds, arena).ok());
  const auto& c1 = std::get<cmd::create>(cmds[0]);
  EXPECT_EQ(c1.tokens, (std::vector<token_id>{108, 109, 110, 111, 112}));
  EXPECT_FALSE(c1.shared);
  const auto& a1 = std::get<cmd::append>(cmds[2]);
  EXPECT_EQ(a1.tokens, (std::vector<token_id>{160, 161, 162, 163}));
  EXPECT_FALSE(a1.shared);
  EXPECT_EQ(std::get<cmd::create>(cmds[3]).tokens, (std::vector<token_id>{7, 8})) << "lists stay";
  EXPECT_TRUE(std::get<cmd::create>(cmds[4]).tokens.empty());
  EXPECT_FALSE(std::get<cmd::create>(cmds[4]).shared);
  const auto& l = std::get<cmd::lookup>(cmds[5]);
  EXPECT_EQ(l.tokens, (std::vector<token_id>{110, 111, 112}));
  EXPECT_FALSE(l.shared);
  EXPECT_TRUE(l.without_indices);
}

TEST(SharedTokens, ARangePastTheEndRefusesTheStepAndChangesNothing) {
  const std::vector<token_id> arena = arena_of(64);
  for (const cmd::token_range bad :
       {cmd::token_range{60, 5}, cmd::token_range{65, 0}, cmd::token_range{1, ~std::uint64_t{0}},
        cmd::token_range{~std::uint64_t{0}, 2}}) {
    std::vector<command> cmds{cmd::create{1, 0, {}, cmd::token_range{0, 4}},
                              cmd::append{1, {}, bad}, cmd::lookup{0, {}, false, bad}};
    const std::vector<command> before = cmds;
    const status s = resolve_shared_tokens(cmds, arena);
    ASSERT_FALSE(s.ok()) << bad.at << "+" << bad.count;
    EXPECT_EQ(s.err().code, errc::invalid_argument);
    EXPECT_NE(s.err().message.find("command 1 (append)"), std::string::npos) << s.err().message;
    EXPECT_NE(s.err().message.find("past the end"), std::string::npos) << s.err().message;
    EXPECT_EQ(cmds, before) << "the good range before it is not copied either";
  }
}

TEST(SharedTokens, ASessionWithoutAnArenaRefusesRanges) {
  std::vector<command> cmds{cmd::create{1, 0, {}, cmd::token_range{0, 1}}};
  const status s = resolve_shared_tokens(cmds, {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.err().message.find("no token arena"), std::string::npos) << s.err().message;
  std::vector<command> lists{cmd::create{1, 0, {1}, {}}};
  EXPECT_TRUE(resolve_shared_tokens(lists, {}).ok()) << "lists need no arena";
}

TEST(SharedTokens, ValidationRefusesBothFormsAndCountsOverTheLimit) {
  const status both = validate_command(cmd::create{1, 0, {5}, cmd::token_range{0, 1}}, 100);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.err().message.find("at once"), std::string::npos) << both.err().message;
  const status big = validate_command(cmd::append{1, {}, cmd::token_range{0, 101}}, 100);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.err().message.find("101"), std::string::npos) << big.err().message;
  EXPECT_TRUE(validate_command(cmd::append{1, {}, cmd::token_range{0, 100}}, 100).ok());
  const status both_lookup =
      validate_command(cmd::lookup{0, {5}, false, cmd::token_range{0, 1}}, 100);
  ASSERT_FALSE(both_lookup.ok());
  EXPECT_NE(both_lookup.err().message.find("lookup: tokens and a shared range at once"),
            std::string::npos)
      << both_lookup.err().message;
  EXPECT_FALSE(validate_command(cmd::lookup{0, {}, false, cmd::token_range{0, 101}}, 100).ok());
}

// An engine without the node (no arena resolved the range) refuses it instead of creating
// a request with an empty prompt.
TEST(SharedTokens, AnUnresolvedRangeFailsItsCommand) {
  instance_spec spec;
  spec.model_id = "unresolved";
  spec.kv_tokens = 256;
  spec.ssm_slots = 8;
  spec.request_rows = 4;
  radix_cache cache(cache_config_of(spec));
  request_manager m(request_config_of(spec), cache);
  std::vector<command> cmds{cmd::create{1, 0, {}, cmd::token_range{0, 3}}, cmd::match{1},
                            cmd::lookup{0, {}, false, cmd::token_range{0, 3}}};
  std::vector<command_result> results;
  execute_batch(m, cache, cmds, results, {});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_FALSE(results[0].ok());
  EXPECT_NE(results[0].error.find("token arena"), std::string::npos) << results[0].error;
  EXPECT_FALSE(results[1].ok()) << "no request 1 was created";
  EXPECT_FALSE(results[2].ok()) << "no lookup of an empty key";
  EXPECT_NE(results[2].error.find("token arena"), std::string::npos) << results[2].error;
}

}  // namespace
}  // namespace hc::test
