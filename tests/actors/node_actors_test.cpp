// The actors with a real actor system, driven through hc::node jobs (no RPC, no sleeps:
// every wait is on a job's completion). Checks the forward fence ordering rule: ops
// queued for batch k run when begin_forward(k) is answered, and only after
// end_forward(k-1).
#include <gtest/gtest.h>

#include <future>

#include "actors/node/node.hpp"

namespace hc::test {
namespace {

template <class Job>
std::future<void> submit(node& n, std::shared_ptr<Job> j) {
  auto p = std::make_shared<std::promise<void>>();
  auto f = p->get_future();
  j->done = [p](Job&) { p->set_value(); };
  n.submit(std::move(j));
  return f;
}

instance_spec spec() {
  instance_spec s;
  s.model_id = "actors";
  s.kv_tokens = 64;
  s.ssm_slots = 8;
  s.ssm_slot_bytes = 16;
  s.request_rows = 4;
  return s;
}

struct NodeActors : ::testing::Test {
  node n{node_config{}};
  session_id open() {
    auto j = std::make_shared<open_job>();
    j->spec = spec();
    submit(n, j).get();
    EXPECT_EQ(j->err.code, errc::ok) << j->err.message;
    return j->session;
  }
  std::shared_ptr<fence_job> fence(session_id s, std::uint64_t b, bool begin) {
    auto j = std::make_shared<fence_job>();
    j->session = s;
    j->batch = b;
    j->begin = begin;
    return j;
  }
  std::vector<std::byte> read(session_id s, slot_id slot) {
    auto j = std::make_shared<bytes_job>();
    j->session = s;
    j->op = bytes_job::what::read_slot;
    j->index = slot;
    submit(n, j).get();
    EXPECT_EQ(j->err.code, errc::ok) << j->err.message;
    return j->data;
  }
};

TEST_F(NodeActors, BeginWaitsForThePreviousEndThenRunsTheQueuedOps) {
  const session_id s = open();
  auto b1 = fence(s, 1, true);
  submit(n, b1).get();
  ASSERT_EQ(b1->err.code, errc::ok);

  // Dirty slot 1, then admit a request whose working slot (1) gets a clear for batch 2.
  auto w = std::make_shared<bytes_job>();
  w->session = s;
  w->op = bytes_job::what::write_slot;
  w->index = 1;
  w->data.assign(16, std::byte{7});
  submit(n, w).get();
  auto step = std::make_shared<step_job>();
  step->session = s;
  step->cmds = {cmd::create{9, 0, {1, 2, 3, 4}}, cmd::match{9}, cmd::alloc_req{9},
                cmd::take_ops{{9}, 2}};
  submit(n, step).get();
  ASSERT_EQ(step->results[2].as<res::alloc_req>().working, 1);
  ASSERT_EQ(step->results[3].as<res::take_ops>().clears, 1u);

  // begin(2) while forward 1 is in flight: it must wait.
  auto b2 = fence(s, 2, true);
  auto b2_done = submit(n, b2);
  // A later job on the same route is answered first, so b2 was seen and is waiting.
  EXPECT_EQ(read(s, 1), std::vector<std::byte>(16, std::byte{7})) << "clear ran too early";
  EXPECT_EQ(b2_done.wait_for(std::chrono::seconds(0)), std::future_status::timeout);

  auto e1 = fence(s, 1, false);
  auto e1_done = submit(n, e1);
  e1_done.get();
  b2_done.get();  // answered once forward 1 ended
  EXPECT_EQ(b2->err.code, errc::ok);
  EXPECT_EQ(read(s, 1), std::vector<std::byte>(16, std::byte{0})) << "clear ran at begin(2)";
}

TEST_F(NodeActors, UnknownSessionAndClosedSessionAreTypedErrors) {
  auto j = fence(12345, 1, true);
  submit(n, j).get();
  EXPECT_EQ(j->err.code, errc::not_found);
  const session_id s = open();
  auto c = std::make_shared<close_job>();
  c->session = s;
  submit(n, c).get();
  EXPECT_EQ(c->err.code, errc::ok);
  auto again = std::make_shared<close_job>();
  again->session = s;
  submit(n, again).get();
  EXPECT_EQ(again->err.code, errc::not_found);
}

TEST_F(NodeActors, AfterShutdownJobsFailWithIoError) {
  n.shutdown();
  auto j = std::make_shared<open_job>();
  j->spec = spec();
  submit(n, j).get();
  EXPECT_EQ(j->err.code, errc::io_error);
}

}  // namespace
}  // namespace hc::test
