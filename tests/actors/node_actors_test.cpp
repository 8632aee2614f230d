// The actors with a real actor system, driven through hc::node jobs (no RPC, no sleeps:
// every wait is on a job's completion). Checks the forward fence ordering rule: ops
// queued for batch k run when begin_forward(k) is answered, and only after
// end_forward(k-1).
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>

#include "actors/common/invariant.hpp"
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
  step->cmds = {cmd::create{9, 0, {1, 2, 3, 4}, {}}, cmd::match{9}, cmd::alloc_req{9},
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

// An actor that ends abnormally (here killed, as a bug would end it) is noticed: the node's
// handler hears of it once, naming the actor; every later job is refused with
// invariant_violated instead of waiting for ever; shutdown still ends every actor.
TEST(NodeActorFailure, IsReportedOnceAndLaterJobsAreRefused) {
  std::promise<std::string> reported;
  std::atomic<int> calls{0};
  node_config cfg;
  cfg.on_actor_failure = [&](const std::string& what) {
    if (calls.fetch_add(1) == 0) reported.set_value(what);
  };
  const std::uint64_t violations = invariant_violations();
  node n{cfg};
  auto o = std::make_shared<open_job>();
  o->spec = spec();
  submit(n, o).get();
  ASSERT_EQ(o->err.code, errc::ok) << o->err.message;
  auto second = std::make_shared<open_job>();
  second->spec = spec();
  second->spec.model_id = "another";
  submit(n, second).get();
  ASSERT_EQ(second->err.code, errc::ok) << second->err.message;

  ASSERT_TRUE(n.kill_instance_for_testing(o->session));
  EXPECT_FALSE(n.kill_instance_for_testing(o->session + 100));
  const std::string what = reported.get_future().get();
  EXPECT_NE(what.find("radix_cache actor of instance"), std::string::npos) << what;
  EXPECT_NE(what.find("failed"), std::string::npos) << what;
  EXPECT_EQ(invariant_violations(), violations + 1);

  // The other instance's session is refused too: the whole node stopped serving.
  auto step = std::make_shared<step_job>();
  step->session = second->session;
  step->cmds = {cmd::create{1, 0, {1, 2, 3}, {}}};
  submit(n, step).get();
  EXPECT_EQ(step->err.code, errc::invariant_violated);
  EXPECT_NE(step->err.message.find(what), std::string::npos) << step->err.message;
  auto again = std::make_shared<open_job>();
  again->spec = spec();
  submit(n, again).get();
  EXPECT_EQ(again->err.code, errc::invariant_violated);
  n.shutdown();  // returns: no actor is left waiting
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace hc::test
