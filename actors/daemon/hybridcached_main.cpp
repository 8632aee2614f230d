// hybridcached: the cache node. Starts the actors, the RPC server and the metrics
// endpoint, then waits for SIGINT / SIGTERM / SIGHUP and shuts down in order (RPC, actors,
// metrics) with exit status 0. An actor that fails (a bug: node_config::on_actor_failure)
// stops it the same way with exit status 70, so a supervisor restarts it and the workers,
// whose connections close, reconnect instead of waiting for replies that cannot come.
#include <grp.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "actors/common/log.hpp"
#include "actors/common/thread_name.hpp"
#include "actors/common/version.hpp"
#include "actors/daemon/check_config.hpp"
#include "actors/daemon/daemon_options.hpp"
#include "actors/daemon/json_log.hpp"
#include "actors/daemon/l3_start.hpp"
#include "actors/node/host_memory.hpp"
#include "actors/node/node.hpp"
#include "cli/command_line.hpp"
#include "cli/standard_streams.hpp"
#include "cli/token_file.hpp"
#include "events/zmq_kv_event_publisher.hpp"
#include "gpu/shm_region.hpp"
#include "monitoring/prometheus_metrics.hpp"
#include "schema/protocol_version.hpp"
#include "schema/server/rpc_server.hpp"
#include "schema/server/unix_socket_path.hpp"
#include "storage/rocksdb_store.hpp"

namespace {

/// Group `gid`'s name ("name (gid)"), or its number where it has none.
std::string group_name(gid_t gid) {
  const group* g = ::getgrgid(gid);
  return g != nullptr ? std::string(g->gr_name) + " (" + std::to_string(gid) + ")"
                      : std::to_string(gid);
}

constexpr int kActorFailedStatus = 70;  // EX_SOFTWARE

/// `about`: what `hcctl inspect` says of this process (its release and settings).
int run(const hc::daemon_options& o, hc::node_about about, sigset_t& signals) {
  namespace fs = std::filesystem;
  // Only the L3 store lives in the data dir: a node without one creates nothing (it may
  // run where it cannot write, e.g. a read-only root).
  if (o.l3) {
    std::error_code ec;
    fs::create_directories(o.data_dir, ec);
    if (ec) {
      hc::log::error("cannot create --data-dir " + o.data_dir + ": " + ec.message());
      return 2;
    }
  }
  std::string token;
  if (!o.tcp.empty()) {
    auto secret = hc::cli::read_token_file(o.token_file);
    if (!secret || secret->size() < hc::cli::min_secret_chars) {
      hc::log::error("--token-file " + o.token_file + " must exist and hold a secret of at least " +
                     std::to_string(hc::cli::min_secret_chars) + " characters on its first line");
      return 2;
    }
    token = std::move(*secret);
  }

  // Declared before the L3 store: the store's loading thread counts faults in it.
  hc::prometheus_metrics metrics;
  metrics.build_info(hc::version(), hc::rpc::protocol_version());
  // What can keep the node from using its --data-dir (another node holds it, another
  // format, a corrupt CURRENT or MANIFEST) is checked here, before it serves; the index is
  // read before it serves if small, else while it serves (start_l3_store: the tier misses
  // meanwhile), so that a large L3 does not delay the start.
  std::unique_ptr<hc::rocksdb_store> unloaded;
  hc::rocksdb_store_config sc;
  if (o.l3) {
    sc.path = (fs::path(o.data_dir) / "l3").string();
    sc.capacity_bytes = o.l3_capacity;
    sc.index_memory_bytes = o.l3_index_memory;
    if (o.l3_index_memory == hc::l3_index_memory_auto) {
      sc.index_memory_bytes = hc::l3_index_memory_for(hc::memory_this_node_may_use());
      hc::log::info("L3 index may take " + std::to_string(sc.index_memory_bytes >> 20) +
                    " MiB (--l3-index-memory: 1 GiB, or a sixteenth of the memory this node "
                    "may use where less)");
    }
    sc.direct_io = o.l3_direct_io;
    sc.verify_every_read = o.l3_verify_every_read;
    sc.flush_interval = hc::l3_flush_interval(o.l3_flush_seconds);
    sc.quarantine_corrupt = true;  // a corrupt cache is recomputed, not a reason not to start
    sc.min_free_bytes = o.l3_min_free;
    if (o.l3_min_free == hc::l3_min_free_auto) {
      std::error_code made;
      fs::create_directories(sc.path, made);
      std::error_code measured;
      const fs::space_info fsys = fs::space(sc.path, measured);
      sc.min_free_bytes = measured ? 0 : hc::l3_min_free_for(fsys.capacity);
    }
    auto store = hc::rocksdb_store::open_unloaded(sc);
    if (!store) {
      // A store of another format says itself what to do; for a directory that cannot be
      // created or opened (read-only, permissions, another node's lock) the way without one.
      const std::string hint = store.err().code == hc::errc::invalid_config
                                   ? ""
                                   : "; --l3 false runs the node without an L3 store";
      hc::log::error("cannot open the L3 store in " + sc.path + ": " + store.err().message + hint);
      return 2;
    }
    hc::log::info("L3 store keeps " + std::to_string(sc.min_free_bytes >> 20) +
                  " MiB free on its disk (--l3-min-free" +
                  (o.l3_min_free == hc::l3_min_free_auto ? ": 5% of it, at most 4 GiB)" : ")"));
    unloaded = std::move(*store);
  }

  if (o.metrics != "off") {
    if (hc::status s = metrics.serve(o.metrics); !s) {
      hc::log::error(s.err().message);
      return 2;
    }
    hc::log::info("metrics at http://" + metrics.address() + "/metrics");
  }
  // The L3 store outlives the node (the node's actors use it until shutdown) and is
  // closed — memtables flushed, the directory unlocked — when run() returns.
  std::shared_ptr<hc::l3_store> l3;
  if (unloaded) {
    auto started = hc::start_l3_store(std::move(unloaded), sc, o.l3_background_load_above, metrics);
    if (!started) {
      hc::log::error("cannot read the L3 store in " + sc.path + ": " + started.err().message);
      return 2;
    }
    l3 = std::move(*started);
    metrics.watch_l3([store = std::weak_ptr<hc::l3_store>(l3)] {
      const std::shared_ptr<hc::l3_store> s = store.lock();
      if (!s) return hc::l3_figures{};
      const hc::l3_usage u = s->usage();
      return hc::l3_figures{u.values, u.bytes, u.capacity, u.evicted};
    });
  }
  std::unique_ptr<hc::events::zmq_kv_event_publisher> kv_events;
  // ZeroMQ binds an ipc:// path by replacing whatever socket is there: another node's live
  // endpoint went without a word (its subscribers then heard nothing). Checked as --socket.
  for (const auto& [option, endpoint] :
       {std::pair{"--kv-events", o.kv_events}, std::pair{"--kv-events-replay", o.kv_events_replay}})
    if (endpoint.starts_with("ipc://") && endpoint.size() > 6 && endpoint[6] != '@')
      if (hc::status s = hc::rpc::claim_unix_socket_path(endpoint.substr(6), option); !s) {
        hc::log::error(std::string(option) + " " + endpoint + ": " + s.err().message);
        return 2;
      }
  if (o.kv_events != "off") {
    hc::events::publisher_config pc;
    pc.endpoint = o.kv_events;
    pc.replay_endpoint = o.kv_events_replay == "off" ? "" : o.kv_events_replay;
    pc.buffer = o.kv_events_buffer;
    pc.buffer_bytes = o.kv_events_buffer_bytes;
    auto p = hc::events::zmq_kv_event_publisher::start(pc);
    if (!p) {
      hc::log::error(p.err().message);
      return 2;
    }
    kv_events = std::move(*p);
    // An ipc:// endpoint's socket file as the node's socket: its user's alone, or its group's
    // with --group-access (ZeroMQ leaves it to the umask: 0755, or 0775 under a umask of 002,
    // let the group subscribe to events that carry the users' tokens).
    for (const std::string& endpoint : {kv_events->endpoint(), kv_events->replay_endpoint()})
      if (endpoint.starts_with("ipc://") && endpoint.size() > 6 && endpoint[6] != '@' &&
          ::chmod(endpoint.c_str() + 6, hc::shm_mode(hc::shm_access_for(o.group_access))) != 0)
        hc::log::warn("cannot set the mode of " + endpoint + ": " + std::strerror(errno));
    hc::log::info("kv events at " + kv_events->endpoint() +
                  (kv_events->replay_endpoint().empty()
                       ? std::string(" (no replay)")
                       : " (replay at " + kv_events->replay_endpoint() + ")"));
  }
  hc::node_config nc;
  nc.scheduler_threads = o.threads;
  nc.actor_poll_attempts = o.actor_poll_attempts;
  nc.kv_events = kv_events.get();
  nc.metrics = &metrics;
  nc.max_step_commands = o.max_step_commands;
  nc.max_command_tokens = o.max_command_tokens;
  nc.limits.max_pool_bytes = o.max_pool_bytes;
  nc.max_idle_instances = o.max_idle_instances;
  nc.max_sessions = o.max_sessions;
  nc.max_request_tokens = o.max_request_tokens;
  if (o.max_request_tokens == hc::max_request_tokens_auto) {
    // The machine's, or a container's limit where lower: past it the OOM killer, not an
    // outOfMemory answer, stops a worker that never finishes its requests.
    nc.max_request_tokens = hc::request_tokens_for(hc::memory_this_node_may_use());
    hc::log::info("live requests may hold " + std::to_string(nc.max_request_tokens) +
                  " tokens (--max-request-tokens: a quarter of the memory this node may use)");
  }
  nc.l3 = l3;
  nc.group_access = o.group_access;
  nc.about = std::move(about);
  std::atomic<bool> actor_failed{false};
  nc.on_actor_failure = [&actor_failed](const std::string&) {
    actor_failed = true;
    ::kill(::getpid(), SIGTERM);  // blocked in every thread: the sigwait below takes it
  };
  nc.demo.loads_after_ops = o.race_demo == "loads-after-ops";
  if (o.race_demo != "off")
    hc::log::warn("--race-demo " + o.race_demo +
                  ": an ordering rule is OFF on purpose; cached states WILL be corrupted");
  hc::node node(nc);
  hc::rpc_server server(node, metrics);
  hc::rpc_server_config rc;
  rc.unix_path = o.socket;
  rc.tcp_address = o.tcp;
  rc.token = token;
  rc.store_arena_bytes = o.store_arena_bytes;
  rc.max_stores = o.max_stores;
  rc.step_spin = std::chrono::microseconds(o.step_spin_us);
  if (hc::status s = server.start(rc); !s) {
    hc::log::error(s.err().message);
    node.shutdown();
    return 2;
  }
  if (!o.socket.empty())
    hc::log::info("serving on unix:" + o.socket +
                  (o.group_access ? " (mode 0660: the users of group " + group_name(::getegid()) +
                                        " may connect and map its pools)"
                                  : std::string()));
  if (!o.tcp.empty()) hc::log::info("serving on tcp " + server.tcp_address() + " (token required)");
  hc::log::info(o.l3 ? "hybridcached ready (data dir " + o.data_dir + ")"
                     : std::string("hybridcached ready (no L3 store: --l3 false)"));

  int sig = 0;
  sigwait(&signals, &sig);
  if (actor_failed) {
    hc::log::error("stopping after an actor failure (see above); exit status " +
                   std::to_string(kActorFailedStatus));
    // What failed may keep the orderly stop from finishing; the L3 loses at most its
    // last flush interval then (README, Reliability).
    std::thread([] {
      hc::name_this_thread("hc-stop-watch");
      std::this_thread::sleep_for(std::chrono::seconds(10));
      hc::log::error("the stop did not finish in 10 s; exiting");
      std::_Exit(kActorFailedStatus);
    }).detach();
  } else {
    const char* name = sig == SIGINT ? "SIGINT" : sig == SIGHUP ? "SIGHUP" : "SIGTERM";
    hc::log::info(std::string("received ") + name + ", stopping");
  }
  server.stop();
  node.shutdown();
  hc::log::info("stopped");
  return actor_failed ? kActorFailedStatus : 0;
}

/// What the defaults decided at start come to on this machine (--check-config prints them).
std::vector<hc::decided_default> decided_defaults(const hc::daemon_options& o) {
  namespace fs = std::filesystem;
  std::vector<hc::decided_default> decided;
  const std::uint64_t memory = hc::memory_this_node_may_use();
  if (o.max_request_tokens == hc::max_request_tokens_auto)
    decided.push_back({"max-request-tokens", std::to_string(hc::request_tokens_for(memory)),
                       "a quarter of the memory this node may use, at 8 bytes a token"});
  if (o.l3_index_memory == hc::l3_index_memory_auto)
    decided.push_back({"l3-index-memory", std::to_string(hc::l3_index_memory_for(memory)),
                       "1 GiB, or a sixteenth of the memory this node may use where less"});
  if (o.l3_min_free == hc::l3_min_free_auto) {
    // The filesystem the store would be on: that of its nearest directory that exists.
    std::error_code ec;
    fs::path where = fs::absolute(fs::path(o.data_dir) / "l3", ec).lexically_normal();
    while (!where.empty() && !fs::exists(where, ec) && where != where.parent_path())
      where = where.parent_path();
    const fs::space_info fsys = fs::space(where, ec);
    decided.push_back({"l3-min-free", ec ? "?" : std::to_string(hc::l3_min_free_for(fsys.capacity)),
                       "5% of the filesystem of " + where.string() + ", at most 4 GiB"});
  }
  return decided;
}

/// What `hcctl inspect` says of this process under "node": the release, the protocol and
/// every setting as the node runs with it (a default decided at start as it came out).
hc::node_about about_this_node(const CLI::App& app, const hc::daemon_options& o) {
  hc::node_about about;
  about.program = "hybridcached";
  about.version = hc::version();
  about.protocol = hc::rpc::protocol_version();
  for (hc::setting& s : hc::app_settings(app, decided_defaults(o)))
    about.settings.push_back({s.name, std::move(s.value), s.from != hc::setting::origin::unset,
                              s.from == hc::setting::origin::given});
  return about;
}

/// --check-config: prints the settings (stdout) and what would keep the node from starting
/// (stderr); exit status 0 when nothing would, else 2. Starts nothing.
int check_config(const CLI::App& app, const hc::daemon_options& o) {
  const std::string settings = hc::effective_config(app, decided_defaults(o));
  if (std::fwrite(settings.data(), 1, settings.size(), stdout) != settings.size() ||
      std::fflush(stdout) != 0) {  // a full disk, a closed pipe: not a silent "valid"
    hc::log::error(std::string("--check-config cannot write the settings: ") +
                   std::strerror(errno));
    return 1;
  }
  const std::vector<std::string> problems = hc::start_problems(o);
  for (const std::string& p : problems)
    hc::log::error(p);
  if (!problems.empty()) return 2;
  hc::log::info("the configuration is valid (--check-config: nothing was started)");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything opens a file: 0, 1 and 2 that were closed become /dev/null.
  if (const int rc = hc::cli::make_standard_streams_safe("hybridcached"); rc >= 0) return rc;
  // Block the stop signals before any library starts a thread (libraries.md §4).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);  // the terminal went away: stop cleanly, not by default action
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A log reader that goes away (`hybridcached | head`, a log shipper restarted) must not
  // kill the node by SIGPIPE at its next log line, mid-write and without its shutdown: the
  // write fails (EPIPE) and the node serves on.
  ::signal(SIGPIPE, SIG_IGN);
  // floors.md §6: no fresh mmap per large buffer.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);

  hc::daemon_options o;
  CLI::App app{"hybridcached: cache node for hybrid (attention + SSM) LLM inference"};
  app.set_version_flag("--version", hc::rpc::version_line("hybridcached"),
                       "Print the version (and the protocol it speaks) and exit");
  hc::add_daemon_flags(app, o);
  bool check_only = false;
  app.add_flag("--check-config", check_only,
               "Check the settings (command line and --config file) and exit: print them as a "
               "config file, with the defaults decided at start as they come out here, and "
               "whether the node could start on them (its socket's directory, --token-file, "
               "--data-dir); exit status 0, or 2 naming each problem. Starts, binds and creates "
               "nothing, so it may run beside the node it checks")
      ->configurable(false);
  if (const int rc = hc::cli::parse_command_line(app, argc, argv); rc >= 0) return rc;
  if (o.log_format == "json") hc::log::set_format(&hc::json_log_line);  // before any line
  if (hc::status s = hc::check_daemon_options(o); !s) {
    hc::log::error(s.err().message);
    return 2;
  }
  hc::log::set_level(*hc::log::parse_level(o.log_level));
  if (check_only) return check_config(app, o);
  const std::string given = hc::given_settings(app);
  hc::log::info(hc::rpc::version_line("hybridcached") + " starting" +
                (given.empty() ? std::string(" on its defaults")
                               : " with " + given +
                                     " (the rest defaults: --check-config "
                                     "prints them all)"));
  return run(o, about_this_node(app, o), signals);
}
