// The actor system and the thread-safe entry points of hc::node. A step goes from the
// caller's thread straight to its session's radix_cache, a fence or byte access straight to
// its forward_stream (one hop; the route is in the session registry), an external client's
// store call straight to host_storage; opens, closes, stats and drains go to the scheduler
// actor.
#include "actors/node/node.hpp"

#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "actors/common/invariant.hpp"
#include "actors/common/log.hpp"
#include "actors/node/actor_watch.hpp"
#include "actors/node/host_storage_actor.hpp"
#include "actors/node/messages.hpp"
#include "actors/node/scheduler_actor.hpp"
#include "actors/scheduler/command_executor.hpp"
#include "gpu/shm_owner.hpp"

namespace hc {
namespace {

caf::actor_system_config make_caf_config(const node_config& c) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", c.scheduler_threads);
  // floors.md §2: skip the 50 µs sleep polls so work from the RPC thread wakes a worker.
  cfg.set("work-stealing.moderate-poll-attempts", 0);
  cfg.set("work-stealing.aggressive-poll-attempts", c.actor_poll_attempts);
  return cfg;
}

}  // namespace

/// The first failure of an actor of the node (node_config::on_actor_failure).
struct actor_failure_state {
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::string what;  ///< guarded by mu
};

struct node::impl {
  impl(const node_config& c, shm_owner claim)
      : shm_claim(std::move(claim)), cfg(c), caf_cfg(make_caf_config(cfg)), sys(caf_cfg) {}
  /// The node's claim on its shared-memory names (first: it outlives every actor that
  /// creates them). None when the config named the prefix.
  shm_owner shm_claim;
  std::shared_ptr<actor_failure_state> failure = std::make_shared<actor_failure_state>();
  node_config cfg;
  null_metrics no_metrics;
  caf::actor_system_config caf_cfg;
  caf::actor_system sys;
  session_registry registry;
  msg::scheduler_actor_type root;
  msg::storage_actor host;
  std::atomic<bool> down{false};

  template <class Job>
  bool refuse_if_down(const std::shared_ptr<Job>& j) {
    if (failure->failed.load()) {
      std::lock_guard lk(failure->mu);
      j->err = {errc::invariant_violated, "the node stopped serving: " + failure->what};
    } else if (down.load()) {
      j->err = {errc::io_error, "the node is shutting down"};
    } else {
      return false;
    }
    j->complete();
    return true;
  }
  /// The route of the job's session, or the job completed with not_found.
  template <class Job>
  std::optional<session_route> route_of(const std::shared_ptr<Job>& j) {
    if (refuse_if_down(j)) return std::nullopt;
    auto r = registry.find(j->session);
    if (!r) {
      j->err = {errc::not_found, "unknown or closed session " + std::to_string(j->session)};
      j->complete();
    }
    return r;
  }
};

/// The step's size limits, checked on the caller's thread (nothing of the session's state).
status check_step(const step_job& j, const node_config& cfg) {
  if (j.cmds.size() > cfg.max_step_commands)
    return {errc::invalid_argument, "step has " + std::to_string(j.cmds.size()) +
                                        " commands, more than the limit " +
                                        std::to_string(cfg.max_step_commands)};
  for (std::size_t i = 0; i < j.cmds.size(); ++i)
    if (status s = validate_command(j.cmds[i], cfg.max_command_tokens); !s)
      return {s.err().code, "command " + std::to_string(i) + ": " + s.err().message};
  return {};
}

node::node(const node_config& cfg) {
  node_config c = cfg;
  shm_owner claim;
  if (c.shm_prefix.empty()) {
    // L1 pools of nodes that were killed (SIGKILL, OOM killer) stay in /dev/shm until
    // unlinked. Those of live nodes stay, whichever PID namespace they run in: a pid does
    // not tell them apart where containers share /dev/shm (--ipc=host: each is pid 1), and
    // a node that went by one unlinked another's pools and reused their names — whose
    // workers then mapped the other node's memory (gpu/shm_owner.hpp).
    if (const std::size_t n = unlink_orphaned_segments("hybridcache-"); n > 0)
      log::warn("unlinked " + std::to_string(n) +
                " shared-memory segments left by hybridcache nodes that are gone");
    if (auto owned = shm_owner::claim("hybridcache-")) {
      claim = std::move(*owned);
      c.shm_prefix = claim.prefix();
    } else {
      // The names of nodes before the claim (what a pid alone tells): /dev/shm refused the
      // marker, so its pools will likely be refused too, each open saying why.
      c.shm_prefix = "/hybridcache-" + std::to_string(::getpid());
      log::warn("cannot claim this node's shared-memory names (" + owned.err().message +
                "): a node in another PID namespace that shares /dev/shm may unlink its pools");
    }
  }
  if (c.scheduler_threads == 0) c.scheduler_threads = 1;
  impl_ = std::make_unique<impl>(c, std::move(claim));
  if (impl_->cfg.metrics == nullptr) impl_->cfg.metrics = &impl_->no_metrics;
  if (impl_->cfg.time_source == nullptr) impl_->cfg.time_source = &steady();
  impl_->cfg.on_actor_failure = [st = impl_->failure,
                                 user = std::move(c.on_actor_failure)](const std::string& what) {
    {
      std::lock_guard lk(st->mu);
      if (st->failed.load()) return;  // a failure's consequences are not news
      st->what = what;
      st->failed.store(true);
    }
    count_violation("an actor of the node failed");
    log::error(what + "; the node refuses every job from now on");
    if (user) user(what);
  };
  // Blocking L3 I/O: on its own thread, never on the scheduler's.
  impl_->host = impl_->sys.spawn<caf::detached>(host_storage_actor, impl_->cfg.l3,
                                                impl_->cfg.metrics, impl_->cfg.time_source);
  watch_actor(caf::actor_cast<caf::strong_actor_ptr>(impl_->host), "the host_storage actor",
              impl_->cfg.on_actor_failure);
  impl_->root = impl_->sys.spawn(scheduler_actor, impl_->cfg, &impl_->registry, impl_->host);
  watch_actor(caf::actor_cast<caf::strong_actor_ptr>(impl_->root), "the scheduler actor",
              impl_->cfg.on_actor_failure);
}

node::~node() {
  shutdown();
}

const node_config& node::config() const noexcept {
  return impl_->cfg;
}

void node::submit(std::shared_ptr<open_job> j) {
  if (impl_->refuse_if_down(j)) return;
  caf::anon_send(impl_->root, msg::open_atom::value, std::move(j));
}

void node::submit(std::shared_ptr<step_job> j) {
  auto r = impl_->route_of(j);
  if (!r) return;
  if (status s = check_step(*j, impl_->cfg); !s) {
    j->err = s.err();
    return j->complete();
  }
  caf::anon_send(r->radix, msg::step_atom::value, std::move(j));
}

void node::submit(std::shared_ptr<fence_job> j) {
  j->started_ns = static_cast<std::uint64_t>(impl_->cfg.time_source->now().count());
  if (auto r = impl_->route_of(j)) caf::anon_send(r->stream, msg::fence_atom::value, std::move(j));
}

void node::submit(std::shared_ptr<bytes_job> j) {
  if (auto r = impl_->route_of(j)) caf::anon_send(r->stream, msg::bytes_atom::value, std::move(j));
}

void node::submit(std::shared_ptr<close_job> j) {
  if (impl_->refuse_if_down(j)) return;
  auto r = impl_->registry.take(j->session);
  if (!r) {
    j->err = {errc::not_found, "unknown or closed session " + std::to_string(j->session)};
    return j->complete();
  }
  impl_->cfg.metrics->sessions(-1);
  // radix_cache detaches the session from its stream, releases its requests, completes the
  // job and tells the scheduler.
  caf::anon_send(r->radix, msg::close_atom::value, std::move(j));
}

void node::submit(std::shared_ptr<stats_job> j) {
  if (impl_->refuse_if_down(j)) return;
  caf::anon_send(impl_->root, msg::stats_atom::value, std::move(j));
}

void node::submit(std::shared_ptr<drain_job> j) {
  if (impl_->refuse_if_down(j)) return;
  caf::anon_send(impl_->root, msg::drain_atom::value, std::move(j));
}

void node::submit(std::shared_ptr<store_job> j) {
  if (impl_->refuse_if_down(j)) return;
  caf::anon_send(impl_->host, msg::ext_store_atom::value, std::move(j));  // completed there
}

bool node::kill_instance_for_testing(session_id session) {
  auto r = impl_->registry.find(session);
  if (!r) return false;
  caf::anon_send_exit(r->radix, caf::exit_reason::kill);
  return true;
}

void node::shutdown() {
  if (!impl_ || impl_->down.exchange(true)) return;
  {
    std::lock_guard lk(impl_->registry.mu);
    impl_->registry.sessions.clear();  // the scheduler stops the instances' actors
  }
  caf::anon_send(impl_->root, msg::shutdown_atom::value);
  impl_->sys.await_all_actors_done();
}

}  // namespace hc
