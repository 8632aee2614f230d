#pragma once
// Internal to schema/: a client's Cap'n Proto connection to a node over a socket it
// connected itself (connect_stream_socket) — the two-party RPC system over
// socket_message_stream (reads through a buffer, the small messages of one loop turn in one
// write). What capnp::EzRpcClient did before, with the stream chosen here.
//
// Thread safety: a channel belongs to the thread that made it — its calls, its waits and
// its destruction happen there; the channels of one thread share that thread's kj event
// loop (made with the first, gone with the last). A thread with a channel cannot also have
// an EzRpcClient (kj allows one event loop per thread). `sever` is the exception: any
// thread, while the channel lives.

#include <capnp/rpc-twoparty.h>
#include <capnp/rpc.h>
#include <kj/async-io.h>
#include <kj/io.h>
#include <kj/timer.h>

#include <memory>

#include "hybridcache.capnp.h"
#include "schema/socket_message_stream.hpp"

namespace hc::wire_convert {

class rpc_channel {
 public:
  /// Takes `socket`, a connected stream socket in non-blocking mode; closes it when the
  /// channel goes (after the RPC system over it).
  explicit rpc_channel(kj::AutoCloseFd socket);
  ~rpc_channel();
  rpc_channel(const rpc_channel&) = delete;
  rpc_channel& operator=(const rpc_channel&) = delete;

  /// The node's bootstrap capability.
  wire::CacheNode::Client node();
  /// What waits on this channel's calls: the thread's event loop.
  kj::WaitScope& wait_scope() noexcept;
  kj::Timer& timer() noexcept;
  /// Shuts the socket down both ways: the node sees the connection end and every later
  /// call fails. Any thread, while the channel lives.
  void sever() noexcept;

 private:
  kj::AutoCloseFd fd_;  // first: closed after everything that uses it
  std::shared_ptr<kj::AsyncIoContext> io_;
  kj::Own<kj::AsyncIoStream> stream_;
  socket_message_stream messages_;
  capnp::TwoPartyVatNetwork network_;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc_;
};

}  // namespace hc::wire_convert
