// Replays every SGLang trace in tests/data (SGLang's own results, spec/traces/) through
// the in-process replayer and requires every op to agree field by field.
#include <gtest/gtest.h>

#include "tests/support/trace_files.hpp"

#include <cstdlib>
#include <filesystem>

#include "tools/replay/replayer.hpp"

namespace hc::test {
namespace {

class TraceReplay : public ::testing::TestWithParam<std::string> {};

TEST_P(TraceReplay, EveryOpAgreesWithSglang) {
  auto tr = replay::read_trace(GetParam());
  ASSERT_TRUE(tr.ok()) << tr.err().message;
  replay::token_generator gen(tr->config);
  ASSERT_TRUE(gen.self_test().ok());
  replay::replayer rp(tr->config);
  std::size_t checked = 0;
  for (const replay::trace_op& op : tr->ops) {
    replay::outcome o;
    rp.execute(op, o);
    auto d = replay::replayer::compare(op, replay::replayer::to_json(op, o));
    ASSERT_FALSE(d.has_value()) << d->describe();
    checked += op.expect.is_object() ? 1 : 0;
  }
  EXPECT_GT(checked, 1000u);
  EXPECT_TRUE(
      static_cast<replay::local_backend&>(rp.backend()).cache().tree().check_invariants().ok());
}

TEST(TraceReplayData, AllFourSglangTracesArePresent) {
  EXPECT_EQ(bundled_traces().size(), 4u);
}

INSTANTIATE_TEST_SUITE_P(SglangTraces, TraceReplay, ::testing::ValuesIn(bundled_traces()),
                         [](const auto& i) { return trace_test_name(i.param); });

}  // namespace
}  // namespace hc::test
