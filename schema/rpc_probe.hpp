#pragma once
// A measurement probe over a raw Cap'n Proto connection (used by hcbench): keeps a window
// of calls in flight, which the synchronous client library cannot. Not for workers.
//
// Thread safety: none; use from the thread that connected.

#include <cstddef>
#include <memory>
#include <string>

#include "actors/common/instance_spec.hpp"
#include "actors/common/status.hpp"

namespace hc {

class rpc_probe {
 public:
  enum class call {
    ping,        ///< CacheNode.ping: answered on the RPC thread, no actors
    small_step,  ///< Session.step with one evict(0, 0): through the actors
  };
  /// address: "unix:/path" or "host:port" (then `token` logs in).
  static result<std::unique_ptr<rpc_probe>> connect(const std::string& address,
                                                    const std::string& token = "");
  ~rpc_probe();
  /// Opens the session small_step calls use.
  status open(const instance_spec& spec);
  /// Sends `window` calls of `kind`.
  status start(call kind, std::size_t window);
  /// Waits for the oldest call in flight and sends the next one.
  status complete_one();
  /// Waits for every call in flight.
  status drain();

 private:
  struct impl;
  explicit rpc_probe(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace hc
