#pragma once
// Replays through a running node: one session, one RPC per trace op (a step of the op's
// commands), timed as a client-observed round trip.

#include <chrono>
#include <memory>
#include <string>

#include "schema/client.hpp"
#include "tools/replay/replay_backend.hpp"

namespace hc::replay {

class rpc_backend final : public replay_backend {
 public:
  /// Opens a session for the trace on the node at `address` ("unix:/path" or host:port).
  /// call_timeout > 0 bounds the connect and every step (a late one fails with timeout).
  static result<std::unique_ptr<rpc_backend>> connect(const std::string& address,
                                                      const trace_config& cfg,
                                                      const std::string& token = "",
                                                      std::chrono::milliseconds call_timeout = {});
  std::uint64_t run(std::span<const command> cmds, std::vector<command_result>& results) override;

 private:
  rpc_backend() = default;
  std::unique_ptr<client> client_;
  std::unique_ptr<client_session> session_;
};

}  // namespace hc::replay
