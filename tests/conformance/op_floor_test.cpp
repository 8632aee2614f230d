// The memory floors `hcctl replay --bench` times beside the trace ops (tools/replay/op_floor.hpp):
// each floor counts exactly the bytes its op must move (a match: the key up to where it parts
// and the prefix's ids; cache_unfinished: the key, the new tail and the prefix handed back;
// finish: the whole key and the new tail), is timed, and leaves the replay's results alone.
#include <gtest/gtest.h>

#include <string>
#include <unordered_map>

#include "tools/replay/op_floor.hpp"
#include "tools/replay/replayer.hpp"

namespace hc::replay {
namespace {

std::string data(const char* name) {
  return std::string(HC_TEST_DATA_DIR) + "/" + name;
}

struct request_seen {
  std::size_t input_len = 0;
  std::size_t cached = 0;  // what the tree held of its key after its last op
};

TEST(OpFloor, EachFloorCountsTheBytesItsOpMoves) {
  for (const char* name : {"p1_ctx4k_c100.jsonl.gz", "p64_ctx4k_c100.jsonl.gz"}) {
    auto tr = read_trace(data(name));
    ASSERT_TRUE(tr.ok()) << tr.err().message;
    replayer rp(tr->config);
    rp.enable_floors();
    std::unordered_map<std::uint64_t, request_seen> reqs;
    std::size_t floors = 0, timed = 0;
    for (const trace_op& op : tr->ops) {
      outcome o;
      rp.execute(op, o);
      // Floors never change what the cache answers.
      auto d = replayer::compare(op, replayer::to_json(op, o));
      ASSERT_FALSE(d.has_value()) << name << ": " << d->describe();
      switch (op.kind) {
        case op_kind::match: {
          ASSERT_TRUE(o.floor.has_value()) << name << " op " << op.index;
          EXPECT_EQ(o.floor->work.compared, o.kv_matched);
          EXPECT_EQ(o.floor->work.written, 0u);
          EXPECT_EQ(o.floor->work.copied, static_cast<std::size_t>(*o.prefix_len));
          EXPECT_LE(o.floor->work.compared, op.input_len - 1);
          reqs[op.req] = {op.input_len, o.kv_matched};
          break;
        }
        case op_kind::cache_unfinished: {
          ASSERT_TRUE(o.floor.has_value()) << name << " op " << op.index;
          request_seen& r = reqs.at(op.req);
          EXPECT_EQ(o.floor->work.compared, r.input_len);
          EXPECT_EQ(o.floor->work.written, r.input_len - std::min(r.cached, r.input_len));
          EXPECT_EQ(o.floor->work.copied, o.indices.size());
          r.cached = r.input_len;
          break;
        }
        case op_kind::finish: {
          ASSERT_TRUE(o.floor.has_value()) << name << " op " << op.index;
          const request_seen r = reqs.at(op.req);
          const std::size_t total = r.input_len + op.output_len;
          EXPECT_EQ(o.floor->work.compared, total);
          EXPECT_EQ(o.floor->work.written, total - std::min(r.cached, total));
          EXPECT_EQ(o.floor->work.copied, 0u);
          reqs.erase(op.req);
          break;
        }
        default:
          EXPECT_FALSE(o.floor.has_value()) << name << ": op " << op.index << " " << op.name;
          continue;
      }
      ++floors;
      // A floor that moves bytes takes time on the clock (steady_clock counts nanoseconds).
      const floor_work& w = o.floor->work;
      if (w.compared + w.written + w.copied >= 1024) timed += o.floor->first_ns > 0 ? 1 : 0;
    }
    EXPECT_GT(floors, 1000u) << name;
    EXPECT_GT(timed, floors / 2) << name;
  }
}

TEST(OpFloor, WithoutFloorsNoOpCarriesOne) {
  auto tr = read_trace(data("p64_ctx4k_c100.jsonl.gz"));
  ASSERT_TRUE(tr.ok()) << tr.err().message;
  replayer rp(tr->config);
  for (const trace_op& op : tr->ops) {
    outcome o;
    rp.execute(op, o);
    ASSERT_FALSE(o.floor.has_value()) << op.index;
  }
}

TEST(OpFloor, CountsAreClampedToTheQueryAndTheConversation) {
  auto tr = read_trace(data("p1_ctx4k_c100.jsonl.gz"));
  ASSERT_TRUE(tr.ok()) << tr.err().message;
  const trace_config& cfg = tr->config;
  op_floor f(cfg);
  const std::vector<token_id> conv = token_generator(cfg).conversation(3, cfg.conv_lengths[3]);
  const std::span<const token_id> query(conv.data(), 100);
  floor_sample s = f.time(3, query, {500, 700, 1u << 30});
  EXPECT_EQ(s.work.compared, 100u);  // the query's length
  EXPECT_EQ(s.work.written, 100u);   // at most what is compared
  EXPECT_EQ(s.work.copied, cfg.conv_lengths[3]);
  // A conversation the trace does not have moves nothing.
  s = f.time(cfg.conv_lengths.size(), query, {10, 0, 10});
  EXPECT_EQ(s.work.compared, 0u);
  EXPECT_EQ(s.first_ns + s.warm_ns, 0u);
  f.touch(cfg.conv_lengths.size(), 10);  // ignored, no crash
  f.touch(3, 1u << 30);                  // clamped to the conversation
}

}  // namespace
}  // namespace hc::replay
