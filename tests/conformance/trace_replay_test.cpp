// Replays every SGLang trace in tests/data (SGLang's own results, spec/traces/) through
// the in-process replayer and requires every op to agree field by field.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "tools/replay/replayer.hpp"

namespace hc::test {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> traces() {
  std::vector<std::string> out;
  const char* dir = std::getenv("HC_TEST_DATA");
  const fs::path d = dir ? dir : "tests/data";
  if (fs::exists(d))
    for (const auto& e : fs::directory_iterator(d))
      if (e.path().string().find(".jsonl") != std::string::npos) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

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
  EXPECT_TRUE(static_cast<replay::local_backend&>(rp.backend()).cache().tree().check_invariants().ok());
}

TEST(TraceReplayData, AllFourSglangTracesArePresent) {
  EXPECT_EQ(traces().size(), 4u);
}

INSTANTIATE_TEST_SUITE_P(SglangTraces, TraceReplay, ::testing::ValuesIn(traces()),
                         [](const auto& i) {
                           std::string n = fs::path(i.param).filename().string();
                           n = n.substr(0, n.find('.'));
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace hc::test
