#pragma once
// Internal to schema/: the client's message stream. Cap'n Proto 0.9.2 writes each message
// with its own system call and reads each in two or three; a client's sequential call
// sends two messages (the Finish of its last call, then the call) and reads one (the
// Return). This stream writes the small messages queued in one turn of the event loop
// with one `writev`, at the end of the turn (kj::evalLast, just before the loop waits),
// and reads through wire_convert::buffered_input — two system calls where there were five,
// each 1.2–1.6 µs on this project's VMs.
//
// A small message (up to `copy_limit` bytes) is copied and its write reported done at
// once; a larger one is written from the caller's memory after what was queued before it,
// and its promise resolves when it is written. A failed write fails every later one (and
// the connection's reads see the peer gone).
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
// as itself (rpc_channel), never through the base.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
class client_message_stream final : public capnp::MessageStream, private kj::TaskSet::ErrorHandler {
 public:
  static constexpr std::size_t copy_limit = 16 * 1024;

  /// Reads and writes `stream`, which must outlive this.
  explicit client_message_stream(kj::AsyncIoStream& stream);

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

  /// How many `writev` calls (batches and large messages) this stream has made.
  std::size_t writes() const noexcept { return writes_; }

 private:
  void taskFailed(kj::Exception&& e) override;
  /// Moves the queued messages onto the write chain as one write.
  void flush();
  /// Runs `write` after every write before it; resolves when it is done. After a failure
  /// nothing more is written: this write and every later one fail with the first error.
  kj::Promise<void> append(kj::Function<kj::Promise<void>()> write);

  kj::AsyncIoStream& stream_;
  capnp::AsyncIoMessageStream inner_;  ///< large messages, the send buffer's size
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
