#pragma once
// The running node: the actor system and the four kinds of actors (architecture.md §1),
// behind an interface free of CAF so the RPC layer and tests can drive it.
//
// Every submit_* call is thread-safe, returns at once, and completes the job exactly
// once (on an actor thread). A job for an unknown or closed session completes with
// errc::not_found. After shutdown() every job completes with io_error.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/common/clock.hpp"
#include "actors/common/metrics_sink.hpp"
#include "actors/forward_stream/race_demo.hpp"
#include "actors/node/jobs.hpp"
#include "actors/node/node_about.hpp"
#include "actors/radix_cache/kv_events.hpp"
#include "actors/scheduler/instance_config.hpp"
#include "storage/l3_store.hpp"

namespace hc {

struct node_config {
  /// CAF scheduler threads. Default: 2 (floors.md §2: 1-2 on this class of machine).
  std::size_t scheduler_threads = 2;
  /// Times an idle scheduler thread polls for work before it sleeps (CAF's work-stealing
  /// aggressive-poll-attempts). More keeps a thread awake between a worker's calls — a
  /// small call skips waking it (BENCHMARKS.md §4.4) — at the cost of a busy core while
  /// calls keep coming. Default: 100 (CAF's).
  std::size_t actor_poll_attempts = 100;
  /// Limits on specs from clients.
  spec_limits limits;
  /// Most commands in one step. Default: 65536.
  std::size_t max_step_commands = 65536;
  /// Most tokens in one command (and most KV ids one command may ask for). Default: 1M.
  std::size_t max_command_tokens = std::size_t{1} << 20;
  /// Most sessions open at once, over every instance; an open beyond it is refused
  /// (out_of_memory, naming the limit). Default: 1024.
  std::size_t max_sessions = 1024;
  /// Most tokens the live requests of all sessions hold at once (their prompts and
  /// appended outputs, ~8 bytes a token with their rows' KV ids); a create or append past
  /// it fails with out_of_memory naming --max-request-tokens (token_budget.hpp). 0 = no
  /// limit. Default: 0 (hybridcached: a quarter of the machine's memory).
  std::uint64_t max_request_tokens = 0;
  /// Most device KV pages one `inspect --blocks` answer lists, over all instances (an
  /// instance holding more is refused before its pages are hashed; inspect_document.hpp):
  /// at ~90 bytes a page their text stays within one RPC message. Default: 500,000.
  std::uint64_t max_inspect_blocks = 500'000;
  /// Who may use the node: its user alone (false), or also the users of its group (true:
  /// workers that run as other users in the node's group, hybridcached --group-access).
  /// The node's Unix socket (rpc_server) and the shared memory workers map — L1 pools,
  /// request rows, token arenas, Store arenas — are created mode 0660 instead of 0600, in
  /// the node's group (its effective group id). The L3 store stays the user's alone.
  /// Default: false.
  bool group_access = false;
  /// Prefix of the POSIX shm names of the L1 pools. Default: "/hybridcache-<pid>".
  std::string shm_prefix;
  /// Instances whose last session closed keep their tree and pools, so a worker that
  /// reconnects resumes from its cache; beyond this many idle instances the one idle the
  /// longest is destroyed (tree dropped, shared memory unlinked). Default: 4.
  std::size_t max_idle_instances = 4;
  /// Where metrics go (must outlive the node); nullptr = nowhere.
  metrics_sink* metrics = nullptr;
  /// Where every instance publishes its KV events, with state checkpoints (README "Route
  /// on it"; must outlive the node); nullptr = no events (and no page hashing for them).
  kv_event_sink* kv_events = nullptr;
  /// The L3 store shared by every instance whose spec asks for a host tier with storage
  /// (hybridcached opens RocksDB in <data-dir>/l3); nullptr = no L3 (prefetch refused).
  std::shared_ptr<l3_store> l3;
  /// Host memory the pools of a new instance (its L1 pools in /dev/shm on the CPU device,
  /// and its L2 pools) or a new store's arena may take, in bytes; 0 = MemAvailable at open
  /// time less a reserve (actors/node/host_memory.hpp).
  std::uint64_t host_memory_limit = 0;
  /// The clock of every time-based decision and measurement (prefetch timeouts and
  /// deadlines, fence waits, I/O timings); must outlive the node. Default: steady().
  const clock* time_source = nullptr;
  /// What `inspect` says of the process under "node" besides its pid and times.
  node_about about;
  /// Ordering rules turned off on purpose, for hcsim's self-test only. Default: none.
  race_demo demo;
  /// Called once, on the failing actor's thread, when an actor of the node ends abnormally
  /// (an exception escaped a handler, or a kill): a bug. The jobs in that actor's mailbox
  /// are lost and their callers would wait for ever, so the embedder should stop the
  /// process (hybridcached exits with status 70; clients see their connection close). From
  /// then on the node refuses every job with invariant_violated naming the failure, counts
  /// it in invariant_violations() and logs it. Default: only that.
  std::function<void(const std::string& what)> on_actor_failure;
};

class node {
 public:
  explicit node(const node_config& cfg);
  ~node();  ///< shutdown() if not done
  node(const node&) = delete;
  node& operator=(const node&) = delete;

  void submit(std::shared_ptr<open_job> j);
  void submit(std::shared_ptr<step_job> j);
  void submit(std::shared_ptr<fence_job> j);
  void submit(std::shared_ptr<bytes_job> j);
  void submit(std::shared_ptr<close_job> j);
  void submit(std::shared_ptr<stats_job> j);
  /// Completes once no tier work of any instance is in flight (see CacheNode.drain).
  void submit(std::shared_ptr<drain_job> j);
  /// An external client's L3 batch; completes with io_error when the node has no L3.
  void submit(std::shared_ptr<store_job> j);

  /// Closes every session, stops every actor and waits for them. Idempotent.
  void shutdown();

  /// Test hook: kills the radix_cache actor of `session`'s instance (and so its linked
  /// forward_stream), as a bug would; false if the session is unknown.
  bool kill_instance_for_testing(session_id session);

  const node_config& config() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace hc
