// Every SGLang trace replayed through the whole node path (client library -> Cap'n Proto
// over a Unix socket -> scheduler actor -> radix_cache actor) must agree with SGLang's
// results exactly as the in-process replay does.
#include <gtest/gtest.h>

#include "tests/support/trace_files.hpp"

#include <cstdlib>
#include <filesystem>

#include "tests/support/node_fixture.hpp"
#include "tools/replay/replayer.hpp"
#include "tools/replay/rpc_backend.hpp"

namespace hc::test {
namespace {

struct RpcReplay : node_fixture, ::testing::WithParamInterface<std::string> {};

TEST_P(RpcReplay, EveryOpAgreesWithSglangOverRpc) {
  auto tr = replay::read_trace(GetParam());
  ASSERT_TRUE(tr.ok()) << tr.err().message;
  auto backend = replay::rpc_backend::connect(address(), tr->config);
  ASSERT_TRUE(backend.ok()) << backend.err().message;
  replay::replayer rp(tr->config, std::move(*backend));
  replay::replayer local(tr->config);
  std::size_t checked = 0;
  for (const replay::trace_op& op : tr->ops) {
    replay::outcome o, lo;
    rp.execute(op, o);
    local.execute(op, lo);
    const auto line = replay::replayer::to_json(op, o);
    auto d = replay::replayer::compare(op, line);
    ASSERT_FALSE(d.has_value()) << d->describe();
    ASSERT_EQ(line, replay::replayer::to_json(op, lo)) << "RPC and in-process results differ";
    checked += op.expect.is_object() ? 1 : 0;
  }
  EXPECT_GT(checked, 1000u);
}

INSTANTIATE_TEST_SUITE_P(SglangTraces, RpcReplay, ::testing::ValuesIn(bundled_traces()),
                         [](const auto& i) { return trace_test_name(i.param); });

}  // namespace
}  // namespace hc::test
