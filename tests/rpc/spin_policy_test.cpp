// rpc::spin_policy: a call polls for its completion only while its connection is the only
// one calling (for spin_policy::quiet), and never with a budget of zero.
#include <gtest/gtest.h>

#include "schema/server/spin_policy.hpp"

namespace hc::rpc {
namespace {

using namespace std::chrono_literals;
using clock = spin_policy::clock;

TEST(SpinPolicy, OneConnectionPollsOnceItHasBeenAloneForTheQuietSpell) {
  spin_policy p(200us);
  const clock::time_point t0{};
  EXPECT_EQ(p.budget_for(1, t0), 0ns) << "a connection's first call: callers just changed";
  EXPECT_EQ(p.budget_for(1, t0 + 500us), 0ns) << "within the quiet spell";
  EXPECT_EQ(p.budget_for(1, t0 + spin_policy::quiet), 200us);
  EXPECT_EQ(p.budget_for(1, t0 + 5ms), 200us);
}

TEST(SpinPolicy, SeveralConnectionsCallingDoNotPoll) {
  spin_policy p(200us);
  clock::time_point t{};
  for (int i = 0; i < 100; ++i) {  // two connections alternating every 100 µs
    t += 100us;
    EXPECT_EQ(p.budget_for(1 + static_cast<std::uint64_t>(i % 2), t), 0ns) << "call " << i;
  }
  // One of them goes quiet: the other polls again after the quiet spell, not before.
  EXPECT_EQ(p.budget_for(1, t + 200us), 0ns);  // the last call was connection 2's
  EXPECT_EQ(p.budget_for(1, t + 900us), 0ns);
  EXPECT_EQ(p.budget_for(1, t + 200us + spin_policy::quiet), 200us);
  // And another connection's call stops the polls at once.
  EXPECT_EQ(p.budget_for(3, t + 3ms), 0ns);
  EXPECT_EQ(p.budget_for(1, t + 3ms + 10us), 0ns);
}

TEST(SpinPolicy, ABudgetOfZeroNeverPolls) {
  spin_policy off(0ns);
  spin_policy negative(-5us);
  const clock::time_point t0{};
  for (auto at : {t0, t0 + 10ms, t0 + 1s}) {
    EXPECT_EQ(off.budget_for(1, at), 0ns);
    EXPECT_EQ(negative.budget_for(1, at), 0ns);
  }
}

}  // namespace
}  // namespace hc::rpc
