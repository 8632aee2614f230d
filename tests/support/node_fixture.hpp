#pragma once
// An in-process node with its RPC server on a private Unix socket, and helpers to open
// sessions through the client library.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "actors/node/node.hpp"
#include "monitoring/prometheus_metrics.hpp"
#include "schema/client.hpp"
#include "schema/server/rpc_server.hpp"
#include "tests/support/metric_value.hpp"

namespace hc::test {

inline std::string unique_socket_path() {
  static std::atomic<int> n{0};
  return (std::filesystem::temp_directory_path() /
          ("hc-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + ".sock"))
      .string();
}

/// A small bookkeeping-plus-bytes spec (P = 1, no_buffer unless changed).
inline instance_spec small_spec(std::string model = "toy") {
  instance_spec s;
  s.model_id = std::move(model);
  s.page_size = 1;
  s.kv_tokens = 256;
  s.kv_bytes_per_token = 8;
  s.ssm_slots = 16;
  s.ssm_slot_bytes = 64;
  s.request_rows = 8;
  return s;
}

struct node_fixture : ::testing::Test {
  prometheus_metrics metrics;  ///< not served; read with metric()
  double metric(const std::string& series) const { return metric_value(metrics, series); }
  std::unique_ptr<node> n;
  std::unique_ptr<rpc_server> server;
  std::string socket = unique_socket_path();
  std::size_t max_idle_instances = 4;    ///< set in a derived fixture's constructor
  std::size_t max_sessions = 1024;       ///< likewise
  std::uint64_t max_request_tokens = 0;  ///< likewise (0: no limit)
  std::uint64_t max_inspect_blocks = node_config{}.max_inspect_blocks;  ///< likewise
  std::uint64_t host_memory_limit = 0;    ///< likewise (0: the host's MemAvailable)
  node_about about;                       ///< likewise (inspect's "node")
  const clock* clock_for_node = nullptr;  ///< likewise (nullptr: the steady clock)
  std::string tcp_token;                  ///< non-empty: also serve TCP on 127.0.0.1 with it
  rpc_server_config server_limits;        ///< its read bounds are used (likewise)
  std::string address() const { return "unix:" + socket; }

  void SetUp() override {
    node_config cfg;
    cfg.scheduler_threads = 2;
    cfg.metrics = &metrics;
    cfg.max_step_commands = 4096;
    cfg.max_command_tokens = 1 << 16;
    cfg.max_idle_instances = max_idle_instances;
    cfg.max_sessions = max_sessions;
    cfg.max_request_tokens = max_request_tokens;
    cfg.max_inspect_blocks = max_inspect_blocks;
    cfg.host_memory_limit = host_memory_limit;
    cfg.about = about;
    cfg.time_source = clock_for_node;
    n = std::make_unique<node>(cfg);
    server = std::make_unique<rpc_server>(*n, metrics);
    rpc_server_config rc;
    rc.max_calls_in_flight = server_limits.max_calls_in_flight;
    rc.max_reply_backlog_bytes = server_limits.max_reply_backlog_bytes;
    rc.login_timeout = server_limits.login_timeout;
    rc.max_waiting_logins = server_limits.max_waiting_logins;
    rc.unix_path = socket;
    if (!tcp_token.empty()) {
      rc.tcp_address = "127.0.0.1:0";
      rc.token = tcp_token;
    }
    auto s = server->start(rc);
    ASSERT_TRUE(s.ok()) << s.err().message;
  }
  void TearDown() override {
    server->stop();
    n->shutdown();
  }
  std::unique_ptr<client> connect() {
    auto c = client::connect(address());
    EXPECT_TRUE(c.ok()) << c.err().message;
    return c.ok() ? std::move(*c) : nullptr;
  }
};

}  // namespace hc::test
