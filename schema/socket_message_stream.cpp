#include "schema/socket_message_stream.hpp"

#include <capnp/serialize.h>

namespace hc::wire_convert {

socket_message_stream::socket_message_stream(kj::AsyncIoStream& stream, write_mode mode)
    : stream_(stream), mode_(mode), inner_(stream), input_(stream) {}

kj::Promise<kj::Maybe<capnp::MessageReaderAndFds>> socket_message_stream::tryReadMessage(
    kj::ArrayPtr<kj::AutoCloseFd> /*fd_space: no descriptors travel on this stream*/,
    capnp::ReaderOptions options, kj::ArrayPtr<capnp::word> scratch) {
  return capnp::tryReadMessage(input_, options, scratch)
      .then([](kj::Maybe<kj::Own<capnp::MessageReader>>&& m)
                -> kj::Maybe<capnp::MessageReaderAndFds> {
        KJ_IF_MAYBE (read, m) {
          return capnp::MessageReaderAndFds{kj::mv(*read), nullptr};
        }
        return nullptr;
      });
}

kj::Promise<void> socket_message_stream::append(kj::Function<kj::Promise<void>()> write) {
  auto next = tail_
                  .then([this, write = kj::mv(write)]() mutable -> kj::Promise<void> {
                    KJ_IF_MAYBE (e, failed_) {
                      return kj::cp(*e);
                    }
                    return write();
                  })
                  .fork();
  tail_ = next.addBranch().eagerlyEvaluate([this](kj::Exception&& e) {
    if (failed_ == nullptr) failed_ = kj::mv(e);
  });
  return next.addBranch();
}

void socket_message_stream::flush() {
  if (queued_.empty()) return;
  auto batch = kj::heapArray<kj::Array<capnp::word>>(queued_.size());
  for (std::size_t i = 0; i < queued_.size(); ++i)
    batch[i] = kj::mv(queued_[i]);
  queued_.clear();
  ++writes_;
  // The batch's own promise is not needed: a failure reaches later writes through failed_.
  (void)append([this, batch = kj::mv(batch)]() mutable -> kj::Promise<void> {
    auto pieces = kj::heapArray<kj::ArrayPtr<const kj::byte>>(batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i)
      pieces[i] = batch[i].asBytes();
    auto written = stream_.write(pieces);
    return written.attach(kj::mv(pieces), kj::mv(batch));
  });
}

kj::Promise<void> socket_message_stream::writeMessage(
    kj::ArrayPtr<const int> fds, kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>> segments) {
  KJ_REQUIRE(fds.size() == 0, "this stream carries no file descriptors");
  if (mode_ == write_mode::each_message) {
    ++writes_;
    return inner_.writeMessage(nullptr, segments);
  }
  KJ_IF_MAYBE (e, failed_) {
    return kj::cp(*e);
  }
  if (capnp::computeSerializedSizeInWords(segments) * sizeof(capnp::word) > copy_limit) {
    // Written from the caller's memory after what is queued; done when written.
    flush();
    ++writes_;
    return append([this, segments] { return inner_.writeMessage(nullptr, segments); });
  }
  queued_.add(capnp::messageToFlatArray(segments));
  if (!flush_scheduled_) {
    flush_scheduled_ = true;
    tasks_.add(kj::evalLast([this] {
      flush_scheduled_ = false;
      flush();
    }));
  }
  return kj::READY_NOW;
}

kj::Promise<void> socket_message_stream::writeMessages(
    kj::ArrayPtr<kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>>> messages) {
  if (mode_ == write_mode::each_message) {
    ++writes_;
    return inner_.writeMessages(messages);
  }
  auto each = kj::heapArrayBuilder<kj::Promise<void>>(messages.size());
  for (auto m : messages)
    each.add(writeMessage(nullptr, m));
  return kj::joinPromises(each.finish());
}

kj::Promise<void> socket_message_stream::end() {
  if (mode_ == write_mode::each_message) return inner_.end();
  flush();
  return append([this]() -> kj::Promise<void> {
    stream_.shutdownWrite();
    return kj::READY_NOW;
  });
}

void socket_message_stream::taskFailed(kj::Exception&& e) {
  if (failed_ == nullptr) failed_ = kj::mv(e);
}

}  // namespace hc::wire_convert
