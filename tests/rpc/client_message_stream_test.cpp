// wire_convert::client_message_stream: the small messages of one event-loop turn leave in
// one write, in order; a large one is written after those queued before it; a failed write
// fails the writes after it; end() writes what is queued before it shuts the stream. The
// reading side is Cap'n Proto's own stream, over kj's in-memory pipe on one loop.
#include <gtest/gtest.h>

#include <capnp/message.h>
#include <capnp/rpc.capnp.h>
#include <capnp/serialize-async.h>
#include <kj/async-io.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "schema/client_message_stream.hpp"

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
  kj::AsyncIoContext io = kj::setupAsyncIo();
  kj::TwoWayPipe pipe = io.provider->newTwoWayPipe();
  client_message_stream stream{*pipe.ends[0]};
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

TEST(ClientMessageStream, TheSmallMessagesOfOneTurnLeaveInOneWrite) {
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

TEST(ClientMessageStream, ALargeMessageIsWrittenAfterTheOnesQueuedBeforeIt) {
  harness h;
  const std::size_t large = client_message_stream::copy_limit + 1000;
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

TEST(ClientMessageStream, AFailedWriteFailsTheWritesAfterIt) {
  harness h;
  h.pipe.ends[1]->abortRead();  // the peer is gone
  auto queued = h.send(1, 16);  // small: accepted, written at the end of the turn
  queued.wait(h.io.waitScope);
  auto large = h.send(2, client_message_stream::copy_limit + 8);
  EXPECT_ANY_THROW(large.wait(h.io.waitScope));
  auto later = h.send(3, 16);
  EXPECT_ANY_THROW(later.wait(h.io.waitScope)) << "after a failure every write fails";
}

TEST(ClientMessageStream, EndWritesWhatIsQueuedThenEndsTheStream) {
  harness h;
  auto a = h.send(1, 32);
  auto b = h.send(2, 64);
  auto ended = h.stream.end();
  h.expect_call(1, 32);
  h.expect_call(2, 64);
  ended.wait(h.io.waitScope);
  EXPECT_EQ(h.reader().tryReadMessage().wait(h.io.waitScope), nullptr) << "the stream ended";
}

}  // namespace
}  // namespace hc::wire_convert
