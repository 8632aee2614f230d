// Wiring: the actor system, the node actor (instances and sessions), and the thread-safe
// entry points of hc::node.
#include "actors/node/node.hpp"

#include <unistd.h>

#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/forward_stream/forward_stream_actor.hpp"
#include "actors/host_storage/host_storage_actor.hpp"
#include "actors/node/messages.hpp"
#include "actors/radix_cache/radix_cache_actor.hpp"
#include "actors/scheduler/scheduler_actor.hpp"

namespace hc {
namespace {

/// Sessions reachable from outside; written by the node actor (open) and by close.
struct session_registry {
  std::mutex mu;
  std::unordered_map<session_id, caf::actor> sessions;
  bool stopped = false;

  caf::actor find(session_id s) {
    std::lock_guard lk(mu);
    auto it = sessions.find(s);
    return it == sessions.end() ? caf::actor{} : it->second;
  }
};

struct instance {
  std::uint64_t id = 0;
  caf::actor radix, stream;
};

struct node_state {
  node_config cfg;
  session_registry* registry = nullptr;
  std::unordered_map<std::string, instance> instances;
  caf::actor host;
  session_id next_session = 0;
  std::uint64_t next_instance = 0;
};

result<instance> make_instance(caf::event_based_actor* self, node_state& st,
                               const instance_spec& spec) {
  auto pools = std::make_shared<l1_pools>();
  const std::uint64_t id = ++st.next_instance;
  const std::string base = st.cfg.shm_prefix + "-i" + std::to_string(id);
  pools->kv_bytes_per_token = spec.kv_bytes_per_token;
  pools->page_size = spec.page_size;
  pools->ssm_slot_bytes = spec.ssm_slot_bytes;
  if (spec.kv_bytes_per_token > 0) {
    auto r = shm_region::create(base + "-kv",
                                (spec.kv_tokens + spec.page_size) * spec.kv_bytes_per_token);
    if (!r) return r.err();
    pools->kv = std::move(*r);
  }
  if (spec.ssm_slot_bytes > 0) {
    auto r = shm_region::create(base + "-ssm", (spec.ssm_slots + 1) * spec.ssm_slot_bytes);
    if (!r) return r.err();
    pools->ssm = std::move(*r);
  }
  instance in;
  in.id = id;
  in.stream = self->spawn(forward_stream_actor, pools, st.cfg.metrics);
  in.radix = self->spawn(radix_cache_actor, cache_config_of(spec), id, in.stream, st.cfg.metrics);
  return in;
}

void open_session(caf::event_based_actor* self, node_state& st, const msg::open_ptr& job) {
  if (status s = validate(job->spec, st.cfg.limits); !s) {
    job->err = s.err();
    return job->complete();
  }
  const std::string fp = instance_fingerprint(job->spec);
  auto it = st.instances.find(fp);
  if (it == st.instances.end()) {
    auto in = make_instance(self, st, job->spec);
    if (!in) {
      job->err = in.err();
      return job->complete();
    }
    it = st.instances.emplace(fp, *in).first;
  }
  const instance& in = it->second;
  const session_id sid = ++st.next_session;
  self->send(in.stream, msg::attach_atom::value, sid);
  self->send(in.radix, msg::attach_atom::value, sid, request_config_of(job->spec), job->spec.ns);
  scheduler_limits lim{st.cfg.max_step_commands, st.cfg.max_command_tokens};
  caf::actor sched = self->spawn(scheduler_actor, sid, lim, in.radix, in.stream);
  {
    std::lock_guard lk(st.registry->mu);
    st.registry->sessions.emplace(sid, sched);
  }
  st.cfg.metrics->sessions(+1);
  job->session = sid;
  const instance_spec& sp = job->spec;
  job->info.instance_id = in.id;
  job->info.kv_bytes_per_token = sp.kv_bytes_per_token;
  job->info.ssm_slot_bytes = sp.ssm_slot_bytes;
  const std::string base = st.cfg.shm_prefix + "-i" + std::to_string(in.id);
  if (sp.kv_bytes_per_token > 0) {
    job->info.kv_shm = base + "-kv";
    job->info.kv_bytes = (sp.kv_tokens + sp.page_size) * sp.kv_bytes_per_token;
  }
  if (sp.ssm_slot_bytes > 0) {
    job->info.ssm_shm = base + "-ssm";
    job->info.ssm_bytes = (sp.ssm_slots + 1) * sp.ssm_slot_bytes;
  }
  job->complete();
}

/// Gathers every actor's inspect JSON into one document.
void gather_stats(caf::event_based_actor* self, node_state& st, const msg::stats_ptr& job) {
  struct fan_in {
    msg::stats_ptr job;
    std::vector<std::string> instances;
    std::string host;
    std::size_t pending = 0;
    std::size_t sessions = 0;
  };
  auto f = std::make_shared<fan_in>();
  f->job = job;
  {
    std::lock_guard lk(st.registry->mu);
    f->sessions = st.registry->sessions.size();
  }
  f->instances.resize(st.instances.size());
  f->pending = 1 + 2 * st.instances.size();
  auto finish = [f] {
    if (--f->pending != 0) return;
    std::string doc = "{\"sessions\":" + std::to_string(f->sessions) +
                      ",\"host_storage\":" + f->host + ",\"instances\":[";
    for (std::size_t i = 0; i < f->instances.size(); ++i)
      doc += (i ? "," : "") + f->instances[i] + "}";
    doc += "]}";
    f->job->stats.emplace_back("sessions", static_cast<double>(f->sessions));
    f->job->stats.emplace_back("instances", static_cast<double>(f->instances.size()));
    f->job->inspect_json = std::move(doc);
    f->job->complete();
  };
  auto on_err = [f, finish](caf::error&) { finish(); };
  self->request(st.host, caf::infinite, msg::inspect_atom::value)
      .then(
          [f, finish](std::string& s) {
            f->host = std::move(s);
            finish();
          },
          on_err);
  std::size_t i = 0;
  for (const auto& [fp, in] : st.instances) {
    // instances[i] = {"fingerprint":..., "tree":{...}, "stream":{...}  (closing brace added above)
    f->instances[i] = "{\"fingerprint\":\"" + fp + "\"";
    self->request(in.radix, caf::infinite, msg::inspect_atom::value)
        .then(
            [f, finish, i](std::string& s) {
              f->instances[i] += ",\"tree\":" + s;
              finish();
            },
            on_err);
    self->request(in.stream, caf::infinite, msg::inspect_atom::value)
        .then(
            [f, finish, i](std::string& s) {
              f->instances[i] += ",\"stream\":" + s;
              finish();
            },
            on_err);
    ++i;
  }
}

caf::behavior node_actor(caf::event_based_actor* self, node_config cfg,
                         session_registry* registry) {
  auto st = std::make_shared<node_state>();
  st->cfg = std::move(cfg);
  st->registry = registry;
  st->host = self->spawn(host_storage_actor, st->cfg.metrics);
  return {
      [self, st](msg::open_atom, const msg::open_ptr& job) { open_session(self, *st, job); },
      [self, st](msg::stats_atom, const msg::stats_ptr& job) { gather_stats(self, *st, job); },
      [self, st](msg::shutdown_atom) {
        for (const auto& [fp, in] : st->instances) {
          self->send_exit(in.radix, caf::exit_reason::user_shutdown);
          self->send_exit(in.stream, caf::exit_reason::user_shutdown);
        }
        self->send_exit(st->host, caf::exit_reason::user_shutdown);
        self->quit();
      },
  };
}

caf::actor_system_config make_caf_config(const node_config& c) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", c.scheduler_threads);
  // floors.md §2: skip the 50 µs sleep polls so work from the RPC thread wakes a worker.
  cfg.set("work-stealing.moderate-poll-attempts", 0);
  return cfg;
}

std::uint64_t steady_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

}  // namespace

struct node::impl {
  explicit impl(const node_config& c) : cfg(c), caf_cfg(make_caf_config(cfg)), sys(caf_cfg) {}
  node_config cfg;
  null_metrics no_metrics;
  caf::actor_system_config caf_cfg;
  caf::actor_system sys;
  session_registry registry;
  caf::actor root;
  std::atomic<bool> down{false};

  template <class Job>
  bool refuse_if_down(const std::shared_ptr<Job>& j) {
    if (!down.load()) return false;
    j->err = {errc::io_error, "the node is shutting down"};
    j->complete();
    return true;
  }
  template <class Job, class Atom>
  void to_session(Atom atom, const std::shared_ptr<Job>& j) {
    if (refuse_if_down(j)) return;
    caf::actor a = registry.find(j->session);
    if (!a) {
      j->err = {errc::not_found, "unknown or closed session " + std::to_string(j->session)};
      return j->complete();
    }
    caf::anon_send(a, atom, j);
  }
};

node::node(const node_config& cfg) {
  node_config c = cfg;
  if (c.shm_prefix.empty()) c.shm_prefix = "/hybridcache-" + std::to_string(::getpid());
  if (c.scheduler_threads == 0) c.scheduler_threads = 1;
  impl_ = std::make_unique<impl>(c);
  if (impl_->cfg.metrics == nullptr) impl_->cfg.metrics = &impl_->no_metrics;
  impl_->root = impl_->sys.spawn(node_actor, impl_->cfg, &impl_->registry);
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
  impl_->to_session(msg::step_atom::value, j);
}

void node::submit(std::shared_ptr<fence_job> j) {
  j->started_ns = steady_ns();
  impl_->to_session(msg::fence_atom::value, j);
}

void node::submit(std::shared_ptr<bytes_job> j) {
  impl_->to_session(msg::bytes_atom::value, j);
}

void node::submit(std::shared_ptr<close_job> j) {
  if (impl_->refuse_if_down(j)) return;
  caf::actor a;
  {
    std::lock_guard lk(impl_->registry.mu);
    auto it = impl_->registry.sessions.find(j->session);
    if (it != impl_->registry.sessions.end()) {
      a = it->second;
      impl_->registry.sessions.erase(it);
    }
  }
  if (!a) {
    j->err = {errc::not_found, "unknown or closed session " + std::to_string(j->session)};
    return j->complete();
  }
  impl_->cfg.metrics->sessions(-1);
  caf::anon_send(a, msg::close_atom::value, std::move(j));
}

void node::submit(std::shared_ptr<stats_job> j) {
  if (impl_->refuse_if_down(j)) return;
  caf::anon_send(impl_->root, msg::stats_atom::value, std::move(j));
}

void node::shutdown() {
  if (!impl_ || impl_->down.exchange(true)) return;
  std::vector<caf::actor> scheds;
  {
    std::lock_guard lk(impl_->registry.mu);
    for (auto& [id, a] : impl_->registry.sessions)
      scheds.push_back(a);
    impl_->registry.sessions.clear();
  }
  for (auto& a : scheds)
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  caf::anon_send(impl_->root, msg::shutdown_atom::value);
  impl_->sys.await_all_actors_done();
}

}  // namespace hc
