// wire_convert::buffered_input: reads through a buffer give back exactly the bytes written,
// in order, whatever the sizes asked for; small reads are served from one read of the inner
// stream; a read larger than the buffer goes to the caller's memory; the end of the stream
// ends a read short. Driven over kj's in-memory pipe on one loop.
#include <gtest/gtest.h>

#include <capnp/message.h>
#include <capnp/rpc.capnp.h>
#include <capnp/serialize-async.h>
#include <kj/async-io.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "schema/buffered_input.hpp"

namespace hc::wire_convert {
namespace {

/// Counts the reads that reach the stream below the buffer.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
class counting_input final : public kj::AsyncInputStream {
 public:
  explicit counting_input(kj::AsyncInputStream& inner) : inner_(inner) {}
  kj::Promise<std::size_t> tryRead(void* buffer, std::size_t min_bytes,
                                   std::size_t max_bytes) override {
    ++reads;
    return inner_.tryRead(buffer, min_bytes, max_bytes);
  }
  int reads = 0;

 private:
  kj::AsyncInputStream& inner_;
};
#pragma GCC diagnostic pop

/// Both ends of a pipe on one loop (a plain struct: kj's destructors may throw, a gtest
/// fixture's may not).
struct harness {
  explicit harness(std::size_t capacity) : input(counted, capacity) {}
  kj::AsyncIoContext io = kj::setupAsyncIo();
  kj::TwoWayPipe pipe = io.provider->newTwoWayPipe();
  counting_input counted{*pipe.ends[0]};
  buffered_input input;
  kj::AsyncIoStream& writer() { return *pipe.ends[1]; }
};

std::vector<kj::byte> pattern(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<kj::byte> v(n);
  for (auto& b : v)
    b = static_cast<kj::byte>(rng());
  return v;
}

TEST(BufferedInput, SmallReadsAreServedFromOneReadOfTheStream) {
  harness h(4096);
  const auto bytes = pattern(600, 1);
  auto written = h.writer().write(bytes.data(), bytes.size());
  // The sizes Cap'n Proto asks for: a first word, a segment table, a body; several times.
  const std::size_t sizes[] = {8, 24, 8, 112, 8, 40, 8, 8, 384};
  std::vector<kj::byte> got;
  for (std::size_t n : sizes) {
    std::vector<kj::byte> part(n);
    ASSERT_EQ(h.input.tryRead(part.data(), n, n).wait(h.io.waitScope), n);
    got.insert(got.end(), part.begin(), part.end());
  }
  written.wait(h.io.waitScope);
  EXPECT_EQ(got, bytes);
  EXPECT_EQ(h.counted.reads, 1) << "600 bytes in nine reads should take one read of the stream";
  EXPECT_EQ(h.input.buffered(), 0u);
}

TEST(BufferedInput, AReadLargerThanTheBufferGoesToTheCallersMemory) {
  harness h(256);
  const auto bytes = pattern(10'000, 2);
  auto written = h.writer().write(bytes.data(), bytes.size());
  std::vector<kj::byte> head(8), rest(bytes.size() - 8);
  ASSERT_EQ(h.input.tryRead(head.data(), 8, 8).wait(h.io.waitScope), 8u);
  const std::size_t buffered_after_head = h.input.buffered();
  EXPECT_EQ(buffered_after_head, 256u - 8u) << "the first read fills the buffer";
  ASSERT_EQ(h.input.tryRead(rest.data(), rest.size(), rest.size()).wait(h.io.waitScope),
            rest.size());
  written.wait(h.io.waitScope);
  head.insert(head.end(), rest.begin(), rest.end());
  EXPECT_EQ(head, bytes);
  EXPECT_EQ(h.input.buffered(), 0u) << "nothing of the large read passed through the buffer";
}

TEST(BufferedInput, TheEndOfTheStreamEndsAReadShort) {
  harness h(4096);
  const auto bytes = pattern(5, 3);
  h.writer().write(bytes.data(), bytes.size()).wait(h.io.waitScope);
  h.writer().shutdownWrite();
  kj::byte word[8];
  EXPECT_EQ(h.input.tryRead(word, 8, 8).wait(h.io.waitScope), 5u);
  EXPECT_EQ(std::vector<kj::byte>(word, word + 5), bytes);
  EXPECT_EQ(h.input.tryRead(word, 8, 8).wait(h.io.waitScope), 0u);
}

TEST(BufferedInput, ReadsOfAnySizeGiveBackTheBytesInOrder) {
  for (std::uint32_t seed = 0; seed < 20; ++seed) {
    SCOPED_TRACE(seed);
    harness h(64 + seed * 37);
    const auto bytes = pattern(100'000, seed);
    // The writer hands the bytes over in pieces of random size, one after another.
    std::mt19937 rng(seed + 100);
    kj::Promise<void> written = kj::READY_NOW;
    for (std::size_t at = 0; at < bytes.size();) {
      const std::size_t n = std::min<std::size_t>(bytes.size() - at, 1 + rng() % 3000);
      written = written.then([&h, p = bytes.data() + at, n] { return h.writer().write(p, n); });
      at += n;
    }
    written = written.then([&h] { h.writer().shutdownWrite(); });
    std::vector<kj::byte> got(bytes.size());
    std::size_t at = 0;
    while (at < got.size()) {
      const std::size_t left = got.size() - at;
      const std::size_t max = std::min<std::size_t>(left, 1 + rng() % 2000);
      const std::size_t min = rng() % 4 == 0 ? 1 : max;
      const std::size_t n = h.input.tryRead(got.data() + at, min, max).wait(h.io.waitScope);
      ASSERT_GE(n, min);
      ASSERT_LE(n, max);
      at += n;
    }
    written.wait(h.io.waitScope);
    EXPECT_EQ(got, bytes);
    kj::byte extra;
    EXPECT_EQ(h.input.tryRead(&extra, 1, 1).wait(h.io.waitScope), 0u);
  }
}

TEST(BufferedInput, CapnProtoReadsMessagesBackToBackThroughIt) {
  harness h(512);
  capnp::AsyncIoMessageStream sender(h.writer());
  // Calls with payloads from empty to larger than the buffer, and a message of several
  // segments (a builder whose first segment is one word).
  std::vector<std::size_t> sizes = {0, 10, 3, 4000, 0, 70'000, 1};
  kj::Promise<void> written = kj::READY_NOW;
  std::vector<kj::Own<capnp::MallocMessageBuilder>> sent;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    auto m = kj::heap<capnp::MallocMessageBuilder>(1, capnp::AllocationStrategy::FIXED_SIZE);
    auto call = m->initRoot<capnp::rpc::Message>().initCall();
    call.setQuestionId(static_cast<std::uint32_t>(i));
    call.getParams().getContent().initAs<capnp::Data>(static_cast<unsigned>(sizes[i]));
    auto data = call.getParams().getContent().getAs<capnp::Data>();
    for (std::size_t j = 0; j < data.size(); ++j)
      data[j] = static_cast<kj::byte>(i * 31 + j);
    written = written.then(
        [&sender, &msg = *m] { return sender.writeMessage(nullptr, msg.getSegmentsForOutput()); });
    sent.push_back(kj::mv(m));
  }
  EXPECT_GT(sent[5]->getSegmentsForOutput().size(), 1u);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    auto reader = capnp::readMessage(h.input).wait(h.io.waitScope);
    auto call = reader->getRoot<capnp::rpc::Message>().getCall();
    EXPECT_EQ(call.getQuestionId(), i);
    auto data = call.getParams().getContent().getAs<capnp::Data>();
    ASSERT_EQ(data.size(), sizes[i]);
    for (std::size_t j = 0; j < data.size(); ++j)
      ASSERT_EQ(data[j], static_cast<kj::byte>(i * 31 + j)) << "message " << i << " byte " << j;
  }
  written.wait(h.io.waitScope);
}

}  // namespace
}  // namespace hc::wire_convert
