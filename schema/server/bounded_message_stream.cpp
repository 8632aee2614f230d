#include "schema/server/bounded_message_stream.hpp"

#include <capnp/rpc.capnp.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

namespace hc::rpc {

bounded_message_stream::bounded_message_stream(kj::AsyncIoStream& stream, kj::Timer& timer,
                                               read_bounds bounds,
                                               std::function<void(const std::string&)> on_pause)
    : inner_(stream, wire_convert::socket_message_stream::write_mode::each_message),
      timer_(timer),
      bounds_(bounds),
      on_pause_(std::move(on_pause)) {}

bool bounded_message_stream::over_bounds() const {
  if (in_flight_.size() >= bounds_.max_calls_in_flight) return true;
  return backlog_ && backlog_() > bounds_.max_reply_backlog_bytes;
}

kj::Promise<void> bounded_message_stream::room() {
  if (!over_bounds()) {
    paused_ = false;
    return kj::READY_NOW;
  }
  if (!paused_) {
    paused_ = true;
    ++pauses_;
    if (on_pause_)
      on_pause_(in_flight_.size() >= bounds_.max_calls_in_flight
                    ? std::to_string(in_flight_.size()) + " calls unanswered"
                    : std::to_string(backlog_()) + " bytes of replies its client has not read");
  }
  auto paf = kj::newPromiseAndFulfiller<void>();
  waiting_ = kj::mv(paf.fulfiller);
  return paf.promise.exclusiveJoin(timer_.afterDelay(1 * kj::MILLISECONDS)).then([this] {
    return room();
  });
}

kj::Promise<kj::Maybe<capnp::MessageReaderAndFds>> bounded_message_stream::tryReadMessage(
    kj::ArrayPtr<kj::AutoCloseFd> fd_space, capnp::ReaderOptions options,
    kj::ArrayPtr<capnp::word> scratch) {
  return room()
      .then([this, fd_space, options, scratch]() {
        return inner_.tryReadMessage(fd_space, options, scratch);
      })
      .then([this](kj::Maybe<capnp::MessageReaderAndFds>&& m) {
        KJ_IF_MAYBE (read, m) {
          note_incoming(*read->reader);
        }
        return kj::mv(m);
      });
}

void bounded_message_stream::note_incoming(capnp::MessageReader& m) {
  // A message that is not a valid rpc::Message is left to the RPC system, which refuses it
  // and ends the connection.
  (void)kj::runCatchingExceptions([&] {
    auto msg = m.getRoot<capnp::rpc::Message>();
    switch (msg.which()) {
      case capnp::rpc::Message::CALL:
        in_flight_.insert(msg.getCall().getQuestionId());
        break;
      case capnp::rpc::Message::BOOTSTRAP:
        in_flight_.insert(msg.getBootstrap().getQuestionId());
        break;
      case capnp::rpc::Message::FINISH:
        // The client gave the question up (a cancelled call): its Return may never come.
        in_flight_.erase(msg.getFinish().getQuestionId());
        break;
      default:
        break;
    }
  });
}

void bounded_message_stream::note_outgoing(
    kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>> segments) {
  (void)kj::runCatchingExceptions([&] {
    capnp::SegmentArrayMessageReader reader(segments);
    auto msg = reader.getRoot<capnp::rpc::Message>();
    if (!msg.isReturn()) return;
    if (in_flight_.erase(msg.getReturn().getAnswerId()) == 0) return;
    if (waiting_.get() != nullptr && waiting_->isWaiting()) waiting_->fulfill();
  });
}

kj::Promise<void> bounded_message_stream::writeMessage(
    kj::ArrayPtr<const int> fds, kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>> segments) {
  note_outgoing(segments);
  return inner_.writeMessage(fds, segments);
}

kj::Promise<void> bounded_message_stream::writeMessages(
    kj::ArrayPtr<kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>>> messages) {
  for (auto m : messages)
    note_outgoing(m);
  return inner_.writeMessages(messages);
}

}  // namespace hc::rpc
