#include "schema/rpc_channel.hpp"

#include <capnp/message.h>
#include <sys/socket.h>

namespace hc::wire_convert {
namespace {

/// The calling thread's kj event loop, made by the first channel that needs it and gone
/// with the last one that holds it.
std::shared_ptr<kj::AsyncIoContext> thread_io() {
  thread_local std::weak_ptr<kj::AsyncIoContext> current;
  if (auto io = current.lock()) return io;
  auto io = std::make_shared<kj::AsyncIoContext>(kj::setupAsyncIo());
  current = io;
  return io;
}

}  // namespace

rpc_channel::rpc_channel(kj::AutoCloseFd socket)
    : fd_(kj::mv(socket)),
      io_(thread_io()),
      stream_(io_->lowLevelProvider->wrapSocketFd(
          fd_.get(), kj::LowLevelAsyncIoProvider::ALREADY_NONBLOCK |
                         kj::LowLevelAsyncIoProvider::ALREADY_CLOEXEC)),
      messages_(*stream_, socket_message_stream::write_mode::per_loop_turn),
      network_(messages_, capnp::rpc::twoparty::Side::CLIENT),
      rpc_(capnp::makeRpcClient(network_)) {}

rpc_channel::~rpc_channel() = default;

wire::CacheNode::Client rpc_channel::node() {
  capnp::word scratch[4] = {};
  capnp::MallocMessageBuilder message(scratch);
  auto server = message.getRoot<capnp::rpc::twoparty::VatId>();
  server.setSide(capnp::rpc::twoparty::Side::SERVER);
  return rpc_.bootstrap(server).castAs<wire::CacheNode>();
}

kj::WaitScope& rpc_channel::wait_scope() noexcept {
  return io_->waitScope;
}

kj::Timer& rpc_channel::timer() noexcept {
  return io_->provider->getTimer();
}

void rpc_channel::sever() noexcept {
  (void)::shutdown(fd_.get(), SHUT_RDWR);
}

}  // namespace hc::wire_convert
