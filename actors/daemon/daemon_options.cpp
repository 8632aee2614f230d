// hybridcached's command line and config file (CLI11), kept apart from main() so that the
// parser can be tested and fuzzed (tests/fuzz/fuzz_daemon_options.cpp).
#include "actors/daemon/daemon_options.hpp"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>

#include "actors/common/host_port.hpp"
#include "actors/common/log.hpp"
#include "actors/daemon/config_file.hpp"
#include "cli/number_checks.hpp"
#include "monitoring/metrics_address.hpp"

namespace hc {

void add_daemon_flags(CLI::App& app, daemon_options& o) {
  app.set_config("--config", "",
                 "Config file: key = value lines, each key a long option's name without its "
                 "dashes (a value as written to the end of the line or a ' #' comment; "
                 "quotes optional)")
      // CLI11 alone took an empty path as no file (a `--config "$UNSET"` ran on the
      // defaults) and said only "was not readable (missing?)" of a directory.
      ->check(CLI::Validator(
          [](std::string& path) -> std::string {
            if (path.empty()) return "Value is empty: the path of a config file is expected";
            std::error_code ec;
            if (std::filesystem::is_directory(path, ec))
              return path + " is a directory, not a config file";
            if (!std::filesystem::exists(path, ec)) return "no file " + path;
            return {};
          },
          "FILE"));
  // Our grammar (config_file.hpp): a key that names no option (a typo, a section) is
  // refused, not ignored, so the node never starts without a setting its operator wrote.
  use_config_file_format(app);
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.add_option("--socket", o.socket,
                 "Unix socket path (created mode 0600; 0660 with --group-access)")
      ->capture_default_str();
  app.add_option("--group-access", o.group_access,
                 "Let the users of the node's group use it: its socket, the shared memory "
                 "workers map (L1 pools, request rows, token arenas, Store arenas) and the "
                 "socket files of ipc:// KV event endpoints are created mode 0660 instead of "
                 "0600, in the node's group (its effective group: the "
                 "systemd unit's Group=, the container's runAsGroup), so inference workers "
                 "running as other users in that group can connect. The L3 store stays the "
                 "node's user's alone")
      ->capture_default_str();
  app.add_option("--metrics", o.metrics, "Prometheus /metrics address host:port, or 'off'")
      ->capture_default_str();
  app.add_option("--data-dir", o.data_dir,
                 "Directory for node data: the L3 store, in <data-dir>/l3 (created with it; not "
                 "used with --l3 false)")
      ->capture_default_str();
  app.add_option("--tcp", o.tcp,
                 "Also listen on TCP host:port (needs --token-file; an IPv6 host in brackets, "
                 "port 0 = any free one, which the log names)");
  app.add_option("--token-file", o.token_file,
                 "File whose first line is the TCP shared secret (spaces, tabs and a CR around it "
                 "are ignored)");
  app.add_option("--threads", o.threads, "Actor scheduler threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--actor-poll-attempts", o.actor_poll_attempts,
                 "Times an idle actor scheduler thread polls for work before it sleeps. More "
                 "(e.g. 20000 with --threads 1) keeps it awake between a worker's calls, so a "
                 "small call skips waking it (BENCHMARKS.md §4.4), at the cost of a busy core "
                 "while calls keep coming")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{100000000}));
  app.add_option("--log-level", o.log_level, "error | warn | info | debug")
      ->capture_default_str()
      ->check(CLI::IsMember({"error", "warn", "warning", "info", "debug"}));
  app.add_option("--log-format", o.log_format,
                 "text: '2026-11-30T16:00:00.123Z info  message' lines; json: one object a "
                 "line, {\"time\":..., \"level\":..., \"msg\":...}, for log collectors that "
                 "parse fields (a message's newlines escaped, so one line is one record)")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--max-step-commands", o.max_step_commands, "Most commands in one step")
      ->capture_default_str()
      ->check(hc::cli::positive());
  app.add_option("--max-command-tokens", o.max_command_tokens, "Most tokens in one command")
      ->capture_default_str()
      ->check(hc::cli::positive());
  app.add_option("--max-pool-bytes", o.max_pool_bytes, "Most bytes of one L1 pool")
      ->capture_default_str()
      ->check(hc::cli::positive());
  app.add_option("--max-sessions", o.max_sessions,
                 "Most sessions open at once over every instance (an open beyond it is refused "
                 "with outOfMemory)")
      ->capture_default_str()
      ->check(hc::cli::positive());
  app.add_option(
      "--max-request-tokens", o.max_request_tokens,
      "Most tokens the live requests of all sessions may hold at once (their prompts "
      "and appended outputs, which the node keeps: about 8 bytes a token with their "
      "rows' KV ids). A create or append past it is refused with outOfMemory, so a "
      "worker that never finishes its requests cannot take the node's memory. "
      "Default: a quarter of the memory this node may use (the machine's, or its cgroup's "
      "limit in a container), at 8 bytes a token; 0 = no limit");
  app.add_option("--max-idle-instances", o.max_idle_instances,
                 "Cache instances kept after their last session closed (the longest idle "
                 "beyond this are destroyed)")
      ->capture_default_str();
  app.add_option("--l3", o.l3,
                 "Keep an L3 store (RocksDB) in <data-dir>/l3 for instances opened with a host "
                 "tier (hicacheRatio): their backups survive a restart and prefetches read them")
      ->capture_default_str();
  app.add_option("--l3-capacity", o.l3_capacity,
                 "Bytes the L3 store keeps before it evicts the least recently used values "
                 "(units accepted: 512MB, 64GB, 1TB — 1024-based)")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false))
      ->check(hc::cli::positive());
  app.add_option("--l3-index-memory", o.l3_index_memory,
                 "Memory the L3 store's in-memory index (the key's bytes + 144 per value) may take "
                 "before the least recently used values are evicted, whatever --l3-capacity "
                 "allows: small values cost more index than bytes. Default: 1 GiB, or a "
                 "sixteenth of the memory this node may use where less (a container's limit); "
                 "0 = no limit (units as --l3-capacity)")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--l3-min-free", o.l3_min_free,
                 "Bytes the L3 store leaves free on its filesystem: while it has less, the "
                 "store evicts its least recently used values (and takes new ones as space "
                 "returns), so the cache never fills the disk. Default: 5% of the filesystem, "
                 "at most 4GB; 0 = off (units as --l3-capacity)")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--l3-flush-seconds", o.l3_flush_seconds,
                 "Sync the L3 store's value segments and flush its index this often when "
                 "something was written: a crash (kill -9, power loss) loses at most this many "
                 "seconds of L3 writes (no write-ahead log, by design). 0 = only when the index "
                 "memtable is full and at shutdown")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--l3-direct-io", o.l3_direct_io,
                 "O_DIRECT for the L3 store's value segments (reads and writes): the values "
                 "bypass the page cache (which stays for other work) and every read goes to the "
                 "device. Off: buffered I/O, the page cache keeps hot values (BENCHMARKS.md "
                 "§5.0 measures both)")
      ->capture_default_str();
  app.add_option("--l3-verify-every-read", o.l3_verify_every_read,
                 "Check an L3 value's XXH3 checksum on every read. Off: on its first read after "
                 "the node started (what a crash or the disk could have damaged) — a value "
                 "this node wrote was hashed from the bytes it was given; the header is "
                 "checked on every read either way (BENCHMARKS.md §5.0 measures both)")
      ->capture_default_str();
  app.add_option("--l3-background-load-above", o.l3_background_load_above,
                 "At start the L3 store reads its index (about 2 s per million values, "
                 "BENCHMARKS.md §13). An index of more records than this is read while the "
                 "node already serves: until the log says 'L3 store ready' the L3 tier misses "
                 "and skips its backups, so a large store does not hold the node (or a startup "
                 "probe) for seconds; a smaller index is read before the node serves. "
                 "0 = always while serving")
      ->capture_default_str();
  app.add_option("--store-arena-bytes", o.store_arena_bytes,
                 "Shared-memory arena of each external Store client (CacheNode.store), through "
                 "which its values move (units accepted: 64MB)")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::size_t{4096}, std::size_t{1} << 40));
  app.add_option("--max-stores", o.max_stores,
                 "Most external Store clients open at once over every connection, each with "
                 "an arena of --store-arena-bytes in /dev/shm (one beyond it is refused with "
                 "outOfMemory)")
      ->capture_default_str()
      ->check(hc::cli::positive());
  app.add_option("--step-spin-us", o.step_spin_us,
                 "Microseconds the RPC thread polls for a step's (a fence's, a Store.exists's) "
                 "completion before it sleeps until the actor wakes it: a call done within it "
                 "answers without that wake-up (BENCHMARKS.md §4.4, §4.16), but meanwhile the "
                 "thread reads no other connection and holds a CPU, so it polls only while one "
                 "connection is calling. 0 = never polls")
      ->capture_default_str()
      ->check(CLI::Range(0u, 100000u));
  app.add_option("--kv-events", o.kv_events,
                 "Publish the cache's KV events, with SSM state checkpoints, on this ZeroMQ PUB "
                 "endpoint (tcp://host:port: a host * = every interface, a port * = any free one, "
                 "an IPv6 host in brackets; ipc://path), or 'off' "
                 "(README \"Route on it\")")
      ->capture_default_str();
  app.add_option("--kv-events-replay", o.kv_events_replay,
                 "ZeroMQ ROUTER endpoint where a subscriber asks for the batches it missed, "
                 "by sequence number (the forms of --kv-events), or 'off'")
      ->capture_default_str();
  app.add_option("--kv-events-buffer", o.kv_events_buffer,
                 "Event batches kept for replay (the oldest go first)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
  app.add_option("--kv-events-buffer-bytes", o.kv_events_buffer_bytes,
                 "Bytes of event batches kept for replay, whatever their count (the oldest go "
                 "first; a page-1 insert of 16K tokens is a ~230 KB batch; units accepted: "
                 "256MB)")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40));
#if HC_RACE_DEMO
  app.add_option("--race-demo", o.race_demo,
                 "Debug only: turn an ordering rule off so that hcsim reports mismatches "
                 "(loads-after-ops: load-backs run after the next forward's COW ops)")
      ->capture_default_str()
      ->check(CLI::IsMember({"off", "loads-after-ops"}))
      ->group("Debug (HC_RACE_DEMO builds)");
#endif
  hc::cli::guard_numbers(app);  // no negative or overflowing whole number, no NaN
}

namespace {

/// A ZeroMQ endpoint the node binds for other processes: tcp://HOST:PORT (HOST "*" = every
/// interface, PORT "*" = any free one) or ipc://PATH. Checked before ZeroMQ reads it, which
/// bound port 99999 as 34463 and took inproc://, which no other process can reach.
status check_zmq_endpoint(const std::string& option, const std::string& endpoint) {
  const auto refuse = [&](const std::string& why) {
    return status{errc::invalid_config,
                  option + " " + endpoint + ": " + why +
                      " (give tcp://host:port, e.g. tcp://*:5557 or tcp://127.0.0.1:*, "
                      "ipc://path, or off)"};
  };
  constexpr std::string_view tcp = "tcp://", ipc = "ipc://";
  if (endpoint.starts_with(ipc)) return endpoint.size() > ipc.size() ? status{} : refuse("no path");
  if (!endpoint.starts_with(tcp))
    return refuse("a subscriber in another process reaches only tcp:// or ipc://");
  std::string address = endpoint.substr(tcp.size());
  if (address.starts_with("*:")) address.replace(0, 1, "0.0.0.0");
  if (address.ends_with(":*")) address.replace(address.size() - 1, 1, "0");
  if (auto parts = parse_host_port(address); !parts) return refuse(parts.err().message);
  return {};
}

}  // namespace

status check_daemon_options(const daemon_options& o) {
  if (o.socket.empty() && o.tcp.empty())
    return {errc::invalid_config, "nothing to listen on: give --socket or --tcp"};
  if (o.l3 && o.data_dir.empty())  // else "cannot create --data-dir : Invalid argument"
    return {errc::invalid_config,
            "--data-dir is empty: give the directory of the node's L3 store, or --l3 false"};
  if (o.metrics != "off")
    if (status s = check_metrics_address(o.metrics); !s) return s;
  if (!o.tcp.empty())  // before kj reads it: a bare "localhost" listened on a random port
    if (auto parts = parse_host_port(o.tcp); !parts)
      return {errc::invalid_config, "--tcp " + o.tcp + ": " + parts.err().message +
                                        " (give host:port, e.g. 0.0.0.0:7070 for every "
                                        "interface, [::1]:7070, or port 0 for any free one)"};
  if (!o.tcp.empty() && o.token_file.empty())
    return {errc::invalid_config,
            "--tcp needs --token-file (TCP clients must present a shared secret)"};
  if (o.tcp.empty() && !o.token_file.empty())  // else an operator believes the socket guarded
    return {errc::invalid_config,
            "--token-file guards --tcp only (the Unix socket is guarded by its mode 0600 "
            "and needs no secret): give --tcp too, or leave --token-file out"};
  if (!log::parse_level(o.log_level))
    return {errc::invalid_config, "unknown --log-level '" + o.log_level + "'"};
  if (o.kv_events != "off")
    if (status s = check_zmq_endpoint("--kv-events", o.kv_events); !s) return s;
  if (o.kv_events_replay != "off")
    if (status s = check_zmq_endpoint("--kv-events-replay", o.kv_events_replay); !s) return s;
  if (o.kv_events == "off" && o.kv_events_replay != "off")
    return {errc::invalid_config, "--kv-events-replay needs --kv-events (the stream it replays)"};
  return {};
}

}  // namespace hc
