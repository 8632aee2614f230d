#pragma once
// hybridcache's C++ client library (CMake: find_package(hybridcache) ->
// hybridcache::client). Synchronous: every call runs the RPC on the calling thread's kj
// event loop and returns its result. A client and its sessions must be used from the
// thread that created the client. Transport failures come back as errc::io_error.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "actors/common/status.hpp"
#include "actors/node/jobs.hpp"

namespace hc {

struct ping_reply {
  std::uint32_t protocol_version = 0;
  std::string node_version;
};

class client;

/// An open session. Closing (explicitly or by destruction) releases every request,
/// lock and slot it holds on the node.
class client_session {
 public:
  ~client_session();
  client_session(const client_session&) = delete;
  client_session& operator=(const client_session&) = delete;

  /// One scheduling step; one result per command. A step-level error (limits, closed
  /// session) is the returned error.
  result<std::vector<command_result>> step(std::span<const command> cmds);
  /// Waits until the ops queued for `batch` have run; returns the wait in ns.
  result<std::uint64_t> begin_forward(std::uint64_t batch);
  status end_forward(std::uint64_t batch);
  const pool_info& pools() const noexcept { return info_; }
  result<std::vector<std::byte>> read_slot(slot_id s);
  status write_slot(slot_id s, std::span<const std::byte> data);
  result<std::vector<std::byte>> read_kv_page(std::uint64_t page);
  status write_kv_page(std::uint64_t page, std::span<const std::byte> data);
  status close();

 private:
  friend class client;
  struct impl;
  client_session(std::unique_ptr<impl> p, pool_info info);
  std::unique_ptr<impl> impl_;
  pool_info info_;
};

class client {
 public:
  /// address: "unix:/path/to.sock" or "host:port" (TCP; then `token` is required).
  static result<std::unique_ptr<client>> connect(const std::string& address,
                                                 const std::string& token = "");
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  result<ping_reply> ping();
  result<std::unique_ptr<client_session>> open(const instance_spec& spec);
  result<std::vector<std::pair<std::string, double>>> stats();
  /// Instances, trees and pools as one JSON document.
  result<std::string> inspect();

 private:
  struct impl;
  explicit client(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace hc
