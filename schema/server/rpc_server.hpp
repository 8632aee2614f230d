#pragma once
// The Cap'n Proto RPC server: a kj event loop on its own thread serving `CacheNode` on a
// Unix socket (default, mode 0600) and, when asked, on TCP behind a shared-secret login.
// Requests reach the actors as jobs (no actor per request); actors complete them through
// a cross-thread fulfiller, so the kj thread never blocks on the node (floors.md §1).
// A client disconnect closes every session it opened.

#include <chrono>
#include <memory>
#include <string>

#include "actors/common/metrics_sink.hpp"
#include "actors/common/status.hpp"
#include "actors/common/version.hpp"
#include "actors/node/node.hpp"

namespace hc {

struct rpc_server_config {
  /// Unix socket path; "" = none. A stale socket file at the path (nobody listening) is
  /// replaced; one that another process serves on is refused, and at stop the path is
  /// removed only if it is still this server's socket (schema/server/unix_socket_path.hpp).
  std::string unix_path;
  /// TCP "host:port" (port 0 = any); "" = none. Requires `token`.
  std::string tcp_address;
  /// Shared secret for TCP clients (CacheNode.login). Required with tcp_address.
  std::string token;
  /// Version string reported by ping: this build's (actors/common/version.hpp).
  std::string node_version = std::string(version());
  /// Per connection, three bounds on what a client can make the node hold: while one is
  /// reached the server stops reading that connection (the client's writes wait in its
  /// socket; nothing is dropped) and reads on once it is below again, so one flooding or
  /// non-reading client cannot grow the node's memory without bound
  /// (schema/server/bounded_message_stream.hpp; fault `rpc_backpressure`).
  /// Words (8 bytes) of calls unanswered (Cap'n Proto's flow limit). Default: 8 Mi words
  /// (64 MiB).
  std::size_t flow_limit_words = std::size_t{8} << 20;
  /// Calls unanswered. Default: 1024.
  std::size_t max_calls_in_flight = 1024;
  /// Bytes of replies queued for a client that does not read them. Default: 64 MiB.
  std::size_t max_reply_backlog_bytes = std::size_t{64} << 20;
  /// TCP clients must log in: a connection that has not within `login_timeout` is closed,
  /// and while `max_waiting_logins` connections wait to log in a new one is closed at once
  /// (fault `rpc_login_refused`), so connections without the token cannot take the node's
  /// file descriptors. Defaults: 10 s, 256.
  std::chrono::milliseconds login_timeout{10'000};
  std::size_t max_waiting_logins = 256;
  /// Bytes of the shared-memory arena each Store capability gets (CacheNode.store).
  /// Default: 64 MiB.
  std::size_t store_arena_bytes = std::size_t{64} << 20;
  /// Most Store capabilities (each with its arena in /dev/shm) open at once over every
  /// connection; a store() beyond it is refused with out_of_memory. An arena lives until
  /// its Store is released and the calls using it are done. Default: 64 (4 GiB of arenas
  /// at the default size).
  std::size_t max_stores = 64;
  /// Most keys in one Store call. Default: 65536.
  std::size_t max_store_keys = 65536;
  /// How long the RPC thread polls for a step's (a fence's, a Store.exists's) completion
  /// before it sleeps until the actor wakes it (rpc::submit_spinning), while one connection is
  /// calling (rpc::spin_policy: none while several are); 0 = never polls. Default: 200 µs
  /// (measured: BENCHMARKS.md §4.4, §4.16).
  std::chrono::nanoseconds step_spin = std::chrono::microseconds(200);
};

class rpc_server {
 public:
  /// `n` and `metrics` must outlive the server.
  rpc_server(node& n, metrics_sink& metrics);
  ~rpc_server();  ///< stop()

  /// Binds and starts serving; returns once listening (or with the bind error).
  status start(const rpc_server_config& cfg);
  /// The bound TCP address (port resolved) or "".
  std::string tcp_address() const;
  /// Stops the loop and drops every connection. Idempotent.
  void stop();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace hc
