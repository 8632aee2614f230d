#pragma once
// Internal to schema/: the message stream of both ends of a connection. Cap'n Proto 0.9.2
// reads each message in two or three system calls and writes each with its own; a
// client's sequential call sends two messages (the Finish of its last call, then the call)
// and the node answers one (the Return). This stream reads through
// wire_convert::buffered_input (one read takes what the socket holds) and, in
// `per_loop_turn` mode (the client's), writes the small messages queued in one turn of
// the event loop with one `writev` at the end of the turn (kj::evalLast, just before the
// loop waits) — per call two system calls where there were five on the client, each
// 1.2–1.6 µs on this project's VMs. The node writes `each_message` at once (a Return is
// the only message of its turn, and its backpressure counts the network's queue).
//
// Batched writes: a small message (up to `copy_limit` bytes) is copied and its write
// reported done at once; a larger one is written from the caller's memory after what was
// queued before it, and its promise resolves when it is written. A failed write fails
// every later one (and the connection's reads see the peer gone).
//
// Thread safety: none; one kj event loop, as the stream it wraps.

#include <capnp/serialize-async.h>
#include <kj/async-io.h>
#include <kj/async.h>
#include <kj/vector.h>

#include <cstddef>

#include "schema/buffered_input.hpp"

namespace hc::wire_convert {

// capnp::MessageStream has no virtual destructor; this final class is owned and destroyed
// as itself (rpc_channel, bounded_message_stream), never through the base.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
class socket_message_stream final : public capnp::MessageStream, private kj::TaskSet::ErrorHandler {
 public:
  static constexpr std::size_t copy_limit = 16 * 1024;
  enum class write_mode {
    each_message,   ///< each message written when the network sends it (Cap'n Proto's way)
    per_loop_turn,  ///< one turn's small messages in one write, at the end of the turn
  };

  /// Reads and writes `stream`, which must outlive this.
  socket_message_stream(kj::AsyncIoStream& stream, write_mode mode);

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
  /// Writes what is queued, then shuts the stream's write side.
  kj::Promise<void> end() override;

  /// How many writes (each one `writev`: a batch, a large message, or in `each_message`
  /// mode a message) this stream has made.
  std::size_t writes() const noexcept { return writes_; }

 private:
  void taskFailed(kj::Exception&& e) override;
  /// Moves the queued messages onto the write chain as one write.
  void flush();
  /// Runs `write` after every write before it; resolves when it is done. After a failure
  /// nothing more is written: this write and every later one fail with the first error.
  kj::Promise<void> append(kj::Function<kj::Promise<void>()> write);

  kj::AsyncIoStream& stream_;
  write_mode mode_;
  capnp::AsyncIoMessageStream inner_;  ///< large messages, each_message mode, the send buffer
  buffered_input input_;
  kj::Vector<kj::Array<capnp::word>> queued_;  ///< small messages, framed, not yet written
  kj::Promise<void> tail_ = kj::READY_NOW;     ///< the last write; writes happen in order
  kj::Maybe<kj::Exception> failed_;
  bool flush_scheduled_ = false;
  std::size_t writes_ = 0;
  kj::TaskSet tasks_{*this};  ///< the scheduled flush
};
#pragma GCC diagnostic pop

}  // namespace hc::wire_convert
