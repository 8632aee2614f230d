#pragma once
// hybridcached's options: every flag, its config-file key and its default. The config
// file (--config) is TOML-style `key = value` using the long flag names without dashes;
// command-line flags override it. deploy/hybridcached.conf.example lists them all.

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "actors/common/status.hpp"

namespace CLI {
class App;
}

namespace hc {

/// --l3-min-free's default: decided from the filesystem (l3_min_free_for).
inline constexpr std::uint64_t l3_min_free_auto = UINT64_MAX;

/// The bytes to leave free on a filesystem of `filesystem_bytes` under --l3-min-free's
/// default: 5 %, at most 4 GiB.
constexpr std::uint64_t l3_min_free_for(std::uint64_t filesystem_bytes) noexcept {
  const std::uint64_t five_percent = filesystem_bytes / 20;
  return five_percent < (std::uint64_t{4} << 30) ? five_percent : std::uint64_t{4} << 30;
}

/// --max-request-tokens' default: decided from the machine's memory (request_tokens_for).
inline constexpr std::uint64_t max_request_tokens_auto = UINT64_MAX;

/// The tokens live requests may hold under --max-request-tokens' default on a machine of
/// `memory_bytes`: a quarter of it at 8 bytes a token (the token and its row's KV id).
constexpr std::uint64_t request_tokens_for(std::uint64_t memory_bytes) noexcept {
  return memory_bytes / 4 / 8;
}

/// --l3-index-memory's default: decided from the memory this node may use
/// (l3_index_memory_for).
inline constexpr std::uint64_t l3_index_memory_auto = UINT64_MAX;

/// The L3 index's memory under --l3-index-memory's default, for a node that may use
/// `memory_bytes` (0 = unknown): 1 GiB, or a sixteenth of that memory where less (a
/// container's limit), so that a store of many small values cannot take a small pod's
/// memory (at 1 GiB, a quarter of a 4 GiB pod).
constexpr std::uint64_t l3_index_memory_for(std::uint64_t memory_bytes) noexcept {
  constexpr std::uint64_t most = std::uint64_t{1} << 30;
  return memory_bytes == 0 || memory_bytes / 16 > most ? most : memory_bytes / 16;
}

/// --l3-flush-seconds as the store's interval: rounded up to whole milliseconds, so that a
/// positive value never becomes 0, which turns the timed flushes off (it truncated: 0.0005
/// meant "never" instead of "as often as possible").
inline std::chrono::milliseconds l3_flush_interval(double seconds) noexcept {
  return std::chrono::milliseconds(static_cast<long long>(std::ceil(seconds * 1000.0)));
}

struct daemon_options {
  std::string socket = "/tmp/hybridcache.sock";  ///< Unix socket (mode 0600, or 0660)
  bool group_access = false;  ///< socket and shared memory 0660: the node's group may use it
  std::string metrics = "127.0.0.1:9464";       ///< /metrics address; "off" = none
  std::string data_dir = "./hybridcache-data";  ///< node data (L3 store); created
  std::string tcp;                              ///< TCP listen "host:port"; "" = off
  std::string token_file;                       ///< file holding the TCP shared secret
  std::size_t threads = 2;                      ///< actor scheduler threads
  std::size_t actor_poll_attempts = 100;  ///< polls of an idle scheduler thread before it sleeps
  std::string log_level = "info";         ///< error | warn | info | debug
  std::string log_format = "text";        ///< text | json (one JSON object a line)
  std::size_t max_step_commands = 65536;  ///< commands per step
  std::size_t max_command_tokens = std::size_t{1} << 20;  ///< tokens per command
  std::size_t max_pool_bytes = std::size_t{64} << 30;     ///< bytes per L1 pool
  std::size_t max_idle_instances = 4;                     ///< kept without sessions
  std::size_t max_sessions = 1024;                        ///< open at once
  /// Tokens held by live requests over every session; max_request_tokens_auto (the
  /// default): request_tokens_for(the machine's memory); 0 = no limit.
  std::uint64_t max_request_tokens = max_request_tokens_auto;
  bool l3 = true;                                       ///< L3 store in <data-dir>/l3
  std::uint64_t l3_capacity = std::uint64_t{64} << 30;  ///< L3 bytes before LRU eviction
  /// L3 index memory before eviction; l3_index_memory_auto (the default): decided at start.
  std::uint64_t l3_index_memory = l3_index_memory_auto;
  /// Bytes the L3 store leaves free on its filesystem; l3_min_free_auto (the default): 5 %
  /// of the filesystem, at most 4 GiB (l3_min_free_for); 0 = off.
  std::uint64_t l3_min_free = UINT64_MAX;
  double l3_flush_seconds = 5;        ///< L3 memtables flushed this often when written; 0 = off
  bool l3_direct_io = false;          ///< O_DIRECT for the L3 store's value segments
  bool l3_verify_every_read = false;  ///< checksum on every L3 read, not only the first
  /// An L3 index of more records than this (RocksDB's estimate) is read while the node
  /// serves (the tier misses meanwhile); a smaller one before it serves. 0 = always while.
  std::uint64_t l3_background_load_above = 100000;
  std::size_t store_arena_bytes = std::size_t{64} << 20;  ///< arena per Store capability
  std::size_t max_stores = 64;                            ///< Store capabilities open at once
  std::uint32_t step_spin_us = 200;      ///< RPC thread's poll for a step's completion; 0 = off
  std::string race_demo = "off";         ///< HC_RACE_DEMO builds: an ordering rule turned off
  std::string kv_events = "off";         ///< ZMQ PUB endpoint of the KV events; "off" = none
  std::string kv_events_replay = "off";  ///< ZMQ ROUTER endpoint for replay; "off" = none
  std::size_t kv_events_buffer = 10000;  ///< batches kept for replay
  std::size_t kv_events_buffer_bytes = std::size_t{256} << 20;  ///< their bytes at most
};

/// Declares every flag of hybridcached on `app`, each bound to its field of `o` (which
/// must outlive the parse), with `--config FILE` for the config file. Parse errors are
/// CLI11's (CLI::ParseError); main() turns them into exit status 2 with the message.
void add_daemon_flags(CLI::App& app, daemon_options& o);

/// The checks a single flag cannot make: something to listen on, a known log level.
/// Errors: invalid_config with the message main() prints.
status check_daemon_options(const daemon_options& o);

}  // namespace hc
