#pragma once
// Internal to schema/: opening a Cap'n Proto connection to a node (login for TCP, then a
// ping so a dead address fails at once) and turning kj exceptions into io_error. Shared
// by the client library and the hcbench probe.

#include <capnp/ez-rpc.h>
#include <kj/exception.h>

#include <memory>
#include <string>

#include "actors/common/status.hpp"
#include "schema/convert.hpp"

namespace hc::wire_convert {

/// Runs f(); a kj exception (disconnect, server-side failure) becomes io_error.
template <class F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const kj::Exception& e) {
    return error{errc::io_error, std::string("rpc: ") + e.getDescription().cStr()};
  }
}

struct node_connection {
  std::shared_ptr<capnp::EzRpcClient> ez;
  wire::CacheNode::Client node = nullptr;
};

/// address: "unix:/path" or "host:port"; a non-empty `token` logs in (TCP).
inline result<node_connection> connect_node(const std::string& address, const std::string& token) {
  return guarded([&]() -> result<node_connection> {
    node_connection c;
    c.ez = std::make_shared<capnp::EzRpcClient>(address.c_str());
    c.node = c.ez->getMain<wire::CacheNode>();
    auto& ws = c.ez->getWaitScope();
    if (!token.empty()) {
      auto req = c.node.loginRequest();
      req.setToken(token);
      auto resp = req.send().wait(ws);
      if (resp.getError().getCode() != wire::ErrorCode::OK)
        return error{errc::invalid_argument,
                     "login refused: " + std::string(resp.getError().getMessage().cStr())};
      c.node = resp.getNode();
    }
    // Fail fast when nothing listens (EzRpcClient connects lazily), or when the node
    // needs a login this connection did not make.
    auto ping = c.node.pingRequest().send().wait(ws);
    if (ping.getError().getCode() != wire::ErrorCode::OK) return get_error(ping.getError());
    return c;
  });
}

}  // namespace hc::wire_convert
