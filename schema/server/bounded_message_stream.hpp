#pragma once
// A connection's message stream with read backpressure. Cap'n Proto's flow limit bounds
// the *bytes of calls* a connection has in flight, not what their answers take: a client
// that sends small calls and never reads its replies (stuck, buggy, hostile) made the node
// queue every reply in memory — 200,000 `stats` calls held 4.4 GB before this. This stream
// stops reading a connection while it has too many calls unanswered or too many reply
// bytes queued for a client that does not read them, and reads on once both are below
// their bounds: the client's writes then block in its own socket, its calls are all
// answered when it reads again (nothing is dropped), and other connections are served
// meanwhile.

#include <capnp/serialize-async.h>
#include <kj/async-io.h>
#include <kj/async.h>
#include <kj/timer.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_set>

#include "schema/socket_message_stream.hpp"

namespace hc::rpc {

struct read_bounds {
  /// Calls (and bootstraps) read from the connection whose Return has not been written yet.
  std::size_t max_calls_in_flight = 1024;
  /// Bytes queued to the client and not yet written to its socket.
  std::size_t max_reply_backlog_bytes = std::size_t{64} << 20;
};

/// Wraps the accepted stream for one TwoPartyVatNetwork, through a
/// wire_convert::socket_message_stream (reads through a buffer: one system call takes what
/// the socket holds, where Cap'n Proto alone makes two or three per message; each message
/// written at once, so the network's queue is the whole backlog). The reply backlog comes from
/// `backlog_bytes` (the network's queue: set it once the network exists); `on_pause`
/// hears each time reading stops for a bound (not again until it has read on), and which.
// capnp::MessageStream has no virtual destructor; this final class is owned and destroyed
// as itself (rpc::connection), never through the base.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
class bounded_message_stream final : public capnp::MessageStream {
 public:
  bounded_message_stream(kj::AsyncIoStream& stream, kj::Timer& timer, read_bounds bounds,
                         std::function<void(const std::string& why)> on_pause = {});

  void set_backlog_source(std::function<std::size_t()> backlog_bytes) {
    backlog_ = std::move(backlog_bytes);
  }
  std::size_t calls_in_flight() const noexcept { return in_flight_.size(); }
  /// How many times reading stopped for a bound so far.
  std::uint64_t pauses() const noexcept { return pauses_; }

  using capnp::MessageStream::tryReadMessage;  // the convenience overloads
  using capnp::MessageStream::writeMessage;
  using capnp::MessageStream::writeMessages;
  kj::Promise<kj::Maybe<capnp::MessageReaderAndFds>> tryReadMessage(
      kj::ArrayPtr<kj::AutoCloseFd> fd_space, capnp::ReaderOptions options,
      kj::ArrayPtr<capnp::word> scratch) override;
  kj::Promise<void> writeMessage(
      kj::ArrayPtr<const int> fds,
      kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>> segments) override;
  kj::Promise<void> writeMessages(
      kj::ArrayPtr<kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>>> messages) override;
  kj::Maybe<int> getSendBufferSize() override { return inner_.getSendBufferSize(); }
  kj::Promise<void> end() override { return inner_.end(); }

 private:
  bool over_bounds() const;
  /// Resolves once the connection is under both bounds: re-checked when a Return is
  /// written and every millisecond (a queue drains as the client reads, which this stream
  /// does not see).
  kj::Promise<void> room();
  void note_incoming(capnp::MessageReader& m);
  void note_outgoing(kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>> segments);

  wire_convert::socket_message_stream inner_;
  kj::Timer& timer_;
  read_bounds bounds_;
  std::function<void(const std::string&)> on_pause_;
  std::function<std::size_t()> backlog_;
  std::unordered_set<std::uint32_t> in_flight_;  ///< question ids read, not yet answered
  kj::Own<kj::PromiseFulfiller<void>> waiting_;  ///< the paused read, woken by a Return
  bool paused_ = false;
  std::uint64_t pauses_ = 0;
};
#pragma GCC diagnostic pop

}  // namespace hc::rpc
