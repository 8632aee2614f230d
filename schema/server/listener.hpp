#pragma once
// The connections of the RPC server: each accepted stream gets its own two-party RPC
// system with the flow limit; a connection ends on its own when its client disconnects,
// which drops its capabilities (and closes its sessions).

#include <capnp/rpc-twoparty.h>
#include <capnp/rpc.h>
#include <kj/async-io.h>
#include <kj/async.h>

#include <cstddef>

namespace hc::rpc {

/// One client connection: its two-party network and RPC system (with the flow limit).
/// Dropping it drops the client's capabilities, which closes its sessions.
struct connection {
  connection(kj::Own<kj::AsyncIoStream>&& s, capnp::Capability::Client bootstrap,
             std::size_t flow_limit_words)
      : stream(kj::mv(s)),
        network(*stream, capnp::rpc::twoparty::Side::SERVER),
        rpc(capnp::makeRpcServer(network, kj::mv(bootstrap))) {
    rpc.setFlowLimit(flow_limit_words);
  }
  kj::Own<kj::AsyncIoStream> stream;
  capnp::TwoPartyVatNetwork network;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc;
};

/// Owns every live connection; each ends on its own when the client disconnects.
class connection_set final : private kj::TaskSet::ErrorHandler {
 public:
  explicit connection_set(std::size_t flow_limit_words) : flow_(flow_limit_words), tasks_(*this) {}
  kj::Promise<void> listen(kj::ConnectionReceiver& l, capnp::Capability::Client bootstrap) {
    return l.accept().then(
        [this, &l, bootstrap](kj::Own<kj::AsyncIoStream>&& s) mutable -> kj::Promise<void> {
          auto c = kj::heap<connection>(kj::mv(s), bootstrap, flow_);
          auto done = c->network.onDisconnect();
          tasks_.add(done.attach(kj::mv(c)));
          return listen(l, kj::mv(bootstrap));
        });
  }

 private:
  void taskFailed(kj::Exception&&) override {}  // a broken connection ends only itself
  std::size_t flow_;
  kj::TaskSet tasks_;
};

}  // namespace hc::rpc
