// wire_convert::socket_message_stream. Batching (the client's mode): the small messages of
// one event-loop turn leave in one write, in order; a large one is written after those
// queued before it; a failed write fails the writes after it; end() writes what is queued
// before it shuts the stream. The node's mode writes each message as it comes. The reading
// side is Cap'n Proto's own stream, over kj's in-memory pipe on one loop.
#include <gtest/gtest.h>

#include <capnp/message.h>
#include <capnp/rpc.capnp.h>
#include <capnp/serialize-async.h>
#include <kj/async-io.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "schema/socket_message_stream.hpp"

namespace hc::wire_convert {
namespace {

/// A Call message whose question id is `id` and whose payload is `bytes` bytes.
kj::Own<capnp::MallocMessageBuilder> call(std::uint32_t id, std::size_t bytes) {
  auto m = kj::heap<capnp::MallocMessageBuilder>();
  auto c = m->initRoot<capnp::rpc::Message>().initCall();
  c.setQuestionId(id);
  auto data = c.getParams().getContent().initAs<capnp::Data>(static_cast<unsigned>(bytes));
  for (std::size_t i = 0; i < bytes; ++i)
    data[i] = static_cast<kj::byte>(id + i);
  return m;
}

/// Both ends of a pipe on one loop (a plain struct: kj's destructors may throw, a gtest
/// fixture's may not).
struct harness {
  using mode = socket_message_stream::write_mode;
  explicit harness(mode m = mode::per_loop_turn) : stream(*pipe.ends[0], m) {}
  kj::AsyncIoContext io = kj::setupAsyncIo();
  kj::TwoWayPipe pipe = io.provider->newTwoWayPipe();
  socket_message_stream stream;
  capnp::AsyncIoMessageStream peer{*pipe.ends[1]};
  std::vector<kj::Own<capnp::MallocMessageBuilder>> sent;

  kj::Promise<void> send(std::uint32_t id, std::size_t bytes) {
    sent.push_back(call(id, bytes));
    return stream.writeMessage(nullptr, sent.back()->getSegmentsForOutput());
  }
  /// The peer's side through MessageStream's convenience overloads.
  capnp::MessageStream& reader() { return peer; }
  /// The next message the peer reads: its question id and payload checked.
  void expect_call(std::uint32_t id, std::size_t bytes) {
    auto m = reader().readMessage().wait(io.waitScope);
    auto c = m->getRoot<capnp::rpc::Message>().getCall();
    EXPECT_EQ(c.getQuestionId(), id);
    auto data = c.getParams().getContent().getAs<capnp::Data>();
    ASSERT_EQ(data.size(), bytes);
    for (std::size_t i = 0; i < bytes; ++i)
      ASSERT_EQ(data[i], static_cast<kj::byte>(id + i)) << "call " << id << " byte " << i;
  }
};

TEST(SocketMessageStream, TheSmallMessagesOfOneTurnLeaveInOneWrite) {
  harness h;
  auto a = h.send(1, 10);
  auto b = h.send(2, 0);
  auto c = h.send(3, 500);
  EXPECT_EQ(h.stream.writes(), 0u) << "nothing is written before the loop turns";
  h.expect_call(1, 10);
  h.expect_call(2, 0);
  h.expect_call(3, 500);
  a.wait(h.io.waitScope);
  b.wait(h.io.waitScope);
  c.wait(h.io.waitScope);
  EXPECT_EQ(h.stream.writes(), 1u);
  // The next turn's messages are another write.
  auto d = h.send(4, 8);
  h.expect_call(4, 8);
  d.wait(h.io.waitScope);
  EXPECT_EQ(h.stream.writes(), 2u);
}

TEST(SocketMessageStream, ALargeMessageIsWrittenAfterTheOnesQueuedBeforeIt) {
  harness h;
  const std::size_t large = socket_message_stream::copy_limit + 1000;
  auto a = h.send(1, 16);
  auto b = h.send(2, large);
  auto c = h.send(3, 16);
  h.expect_call(1, 16);
  h.expect_call(2, large);
  h.expect_call(3, 16);
  a.wait(h.io.waitScope);
  b.wait(h.io.waitScope);
  c.wait(h.io.waitScope);
  EXPECT_EQ(h.stream.writes(), 3u) << "the first small one, the large one, the last small one";
}

TEST(SocketMessageStream, AFailedWriteFailsTheWritesAfterIt) {
  harness h;
  h.pipe.ends[1]->abortRead();  // the peer is gone
  auto queued = h.send(1, 16);  // small: accepted, written at the end of the turn
  queued.wait(h.io.waitScope);
  auto large = h.send(2, socket_message_stream::copy_limit + 8);
  EXPECT_ANY_THROW(large.wait(h.io.waitScope));
  auto later = h.send(3, 16);
  EXPECT_ANY_THROW(later.wait(h.io.waitScope)) << "after a failure every write fails";
}

TEST(SocketMessageStream, EndWritesWhatIsQueuedThenEndsTheStream) {
  harness h;
  auto a = h.send(1, 32);
  auto b = h.send(2, 64);
  auto ended = h.stream.end();
  h.expect_call(1, 32);
  h.expect_call(2, 64);
  ended.wait(h.io.waitScope);
  EXPECT_EQ(h.reader().tryReadMessage().wait(h.io.waitScope), nullptr) << "the stream ended";
}

TEST(SocketMessageStream, TheNodesModeWritesEachMessageAsItComes) {
  harness h(harness::mode::each_message);
  auto a = h.send(1, 10);
  auto b = h.send(2, 20);
  EXPECT_EQ(h.stream.writes(), 2u) << "each message is written when it is sent";
  h.expect_call(1, 10);
  h.expect_call(2, 20);
  a.wait(h.io.waitScope);
  b.wait(h.io.waitScope);
  EXPECT_EQ(h.stream.writes(), 2u);
}

}  // namespace
}  // namespace hc::wire_convert
