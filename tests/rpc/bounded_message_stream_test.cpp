// bounded_message_stream: a connection stops being read while it has too many calls
// unanswered or too many reply bytes queued, and is read on once it is under both bounds.
// Driven over a real socket pair on one kj loop; the client's messages are written whole
// before each read, so a read that does not complete is held by the stream, not the socket.
#include <gtest/gtest.h>

#include <capnp/message.h>
#include <capnp/rpc.capnp.h>
#include <capnp/serialize-async.h>
#include <kj/async-io.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "schema/server/bounded_message_stream.hpp"

namespace hc::rpc {
namespace {

/// Both ends on one loop (a plain struct: kj's destructors may throw, a gtest fixture's
/// may not).
struct harness {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  kj::TwoWayPipe pipe = io.provider->newTwoWayPipe();
  std::size_t backlog = 0;  ///< what the stream reads as the network's queue
  int paused = 0;
  std::string why;  ///< what the last pause said
  bounded_message_stream stream{*pipe.ends[0], io.provider->getTimer(), read_bounds{2, 100},
                                [this](const std::string& w) {
                                  ++paused;
                                  why = w;
                                }};
  capnp::AsyncIoMessageStream client{*pipe.ends[1]};

  harness() {
    stream.set_backlog_source([this] { return backlog; });
  }

  /// Writes one rpc::Message from the client's side; `fill` builds it.
  template <class F>
  void send(F fill) {
    capnp::MallocMessageBuilder m;
    fill(m.initRoot<capnp::rpc::Message>());
    client.writeMessage(nullptr, m.getSegmentsForOutput()).wait(io.waitScope);
  }
  void call(std::uint32_t question) {
    send([&](capnp::rpc::Message::Builder msg) { msg.initCall().setQuestionId(question); });
  }
  void finish(std::uint32_t question) {
    send([&](capnp::rpc::Message::Builder msg) { msg.initFinish().setQuestionId(question); });
  }
  /// The server answers `question` through the stream (as the network writes a Return).
  void answer(std::uint32_t question) {
    capnp::MallocMessageBuilder m;
    m.initRoot<capnp::rpc::Message>().initReturn().setAnswerId(question);
    stream.writeMessage(nullptr, m).wait(io.waitScope);
  }
  /// Whether a read has completed within `ms` milliseconds of the loop (the stream
  /// re-checks its bounds every millisecond, so 100 ms is many chances). A completed read
  /// is taken (as the RPC system takes it), a pending one stays usable.
  bool reads(kj::Promise<kj::Maybe<kj::Own<capnp::MessageReader>>>& p, int ms = 100) {
    for (int i = 0; i <= ms; ++i) {
      if (p.poll(io.waitScope)) {
        p.wait(io.waitScope);
        return true;
      }
      io.provider->getTimer().afterDelay(1 * kj::MILLISECONDS).wait(io.waitScope);
    }
    return false;
  }
  kj::Promise<kj::Maybe<kj::Own<capnp::MessageReader>>> read() { return stream.tryReadMessage(); }
};

TEST(BoundedMessageStream, TooManyCallsInFlightHoldTheReadUntilOneIsAnswered) {
  harness h;
  h.call(1);
  h.call(2);
  h.call(3);
  auto first = h.read();
  ASSERT_TRUE(h.reads(first));
  auto second = h.read();
  ASSERT_TRUE(h.reads(second));
  EXPECT_EQ(h.stream.calls_in_flight(), 2u);
  auto third = h.read();
  EXPECT_FALSE(h.reads(third)) << "two calls unanswered: the third waits in the socket";
  EXPECT_EQ(h.paused, 1);
  EXPECT_EQ(h.why, "2 calls unanswered");
  h.answer(7);  // a Return for no question of this connection frees nothing
  EXPECT_FALSE(h.reads(third));
  h.answer(1);
  EXPECT_TRUE(h.reads(third)) << "an answer makes room";
  EXPECT_EQ(h.stream.calls_in_flight(), 2u);  // calls 2 and 3
  EXPECT_EQ(h.stream.pauses(), 1u);
}

TEST(BoundedMessageStream, AFinishedQuestionNoLongerCounts) {
  harness h;
  h.call(1);
  h.call(2);
  h.finish(1);  // cancelled by the client: its Return may never come
  for (int i = 0; i < 2; ++i) {
    auto r = h.read();
    ASSERT_TRUE(h.reads(r));
  }
  auto f = h.read();
  EXPECT_FALSE(h.reads(f)) << "the Finish is behind the bound too";
  h.answer(2);
  ASSERT_TRUE(h.reads(f));
  EXPECT_EQ(h.stream.calls_in_flight(), 0u);
}

TEST(BoundedMessageStream, AReplyBacklogHoldsTheReadUntilItDrains) {
  harness h;
  h.call(1);
  h.backlog = 101;  // over the 100-byte bound: the client is not reading its replies
  auto r = h.read();
  EXPECT_FALSE(h.reads(r));
  EXPECT_EQ(h.paused, 1);
  h.backlog = 100;  // at the bound is under it
  EXPECT_TRUE(h.reads(r)) << "read on once the queue drained";
  EXPECT_EQ(h.stream.calls_in_flight(), 1u);
  // A second pause is reported again.
  h.call(2);
  h.backlog = 5000;
  auto r2 = h.read();
  EXPECT_FALSE(h.reads(r2));
  EXPECT_EQ(h.paused, 2);
  EXPECT_EQ(h.why, "5000 bytes of replies its client has not read");
  h.backlog = 0;
  EXPECT_TRUE(h.reads(r2));
}

TEST(BoundedMessageStream, BootstrapsCountAsCallsAndOtherMessagesDoNot) {
  harness h;
  h.send([](capnp::rpc::Message::Builder msg) { msg.initBootstrap().setQuestionId(0); });
  h.send([](capnp::rpc::Message::Builder msg) { msg.initRelease().setId(3); });
  h.send([](capnp::rpc::Message::Builder msg) { msg.initBootstrap().setQuestionId(1); });
  for (int i = 0; i < 3; ++i) {
    auto r = h.read();
    ASSERT_TRUE(h.reads(r));
  }
  EXPECT_EQ(h.stream.calls_in_flight(), 2u);
  h.answer(0);
  h.answer(1);
  EXPECT_EQ(h.stream.calls_in_flight(), 0u);
  EXPECT_EQ(h.paused, 0);
}

TEST(BoundedMessageStream, EndOfStreamIsPassedOn) {
  harness h;
  h.pipe.ends[1]->shutdownWrite();
  EXPECT_EQ(h.read().wait(h.io.waitScope), nullptr);
}

}  // namespace
}  // namespace hc::rpc
