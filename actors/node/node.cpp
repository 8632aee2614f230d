// Wiring: the actor system, the node actor (instances and sessions), and the thread-safe
// entry points of hc::node.
#include "actors/node/node.hpp"
#include "actors/common/invariant.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <fstream>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/node/forward_stream_actor.hpp"
#include "actors/node/host_storage_actor.hpp"
#include "actors/node/messages.hpp"
#include "actors/node/radix_cache_actor.hpp"
#include "actors/node/scheduler_actor.hpp"
#include "storage/l3_keys.hpp"

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
  std::size_t sessions = 0;      ///< open sessions
  std::uint64_t idle_since = 0;  ///< node tick when the last session closed
};

struct node_state {
  node_config cfg;
  session_registry* registry = nullptr;
  std::unordered_map<std::string, instance> instances;
  caf::actor host;
  session_id next_session = 0;
  std::uint64_t next_instance = 0;
  std::uint64_t tick = 0;
};

/// MemAvailable of /proc/meminfo in bytes (0 if unknown).
std::uint64_t host_memory_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

/// The L2 pools and L3 access of a new instance (§5.1 sizing); none without a host tier.
result<tier_wiring> make_tiers(node_state& st, const instance_spec& spec, cache_config& cc) {
  tier_wiring w;
  w.time = st.cfg.time_source;
  if (!spec.host_tier()) return w;
  host_pool_request req;
  req.device_kv_tokens = spec.kv_tokens;
  req.device_slots = spec.ssm_slots;
  req.page_size = spec.page_size;
  req.kv_bytes_per_token = spec.kv_bytes_per_token;
  req.state_bytes = spec.ssm_slot_bytes;
  req.host_bytes = spec.hicache_bytes;
  if (spec.hicache_ratio > 0) req.ratio = spec.hicache_ratio;
  req.host_ram_available =
      st.cfg.host_memory_limit ? st.cfg.host_memory_limit : host_memory_available();
  auto sizes = size_host_pools(req);
  if (!sizes) return sizes.err();
  cc.host_kv_tokens = sizes->kv_tokens;
  cc.host_slots = sizes->slots;
  w.host = std::make_shared<host_pools>(*sizes, spec.page_size);
  w.prefetch.threshold_tokens = spec.prefetch_threshold;
  w.prefetch.termination = spec.prefetch_policy;
  if (spec.hicache_storage && st.cfg.l3) {
    w.storage = st.host;
    w.fingerprint =
        l3::fingerprint({spec.model_id, spec.tp_rank, spec.tp_size,
                         spec.page_size * spec.kv_bytes_per_token, spec.ssm_slot_bytes});
  }
  return w;
}

result<instance> make_instance(caf::event_based_actor* self, node_state& st,
                               const instance_spec& spec) {
  cache_config cc = cache_config_of(spec);
  auto tiers = make_tiers(st, spec, cc);
  if (!tiers) return tiers.err();
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
  in.stream = self->spawn(forward_stream_actor, pools, tiers->host, st.cfg.metrics,
                          st.cfg.time_source, st.cfg.demo);
  in.radix = self->spawn(radix_cache_actor, cc, id, in.stream, caf::actor_cast<caf::actor>(self),
                         std::move(*tiers), st.cfg.metrics);
  self->send(in.stream, msg::attach_atom::value, in.radix);  // fence reports go there
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
  instance& in = it->second;
  ++in.sessions;
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

/// The node's totals for `stats`: pools and served counters summed over the instances.
std::vector<std::pair<std::string, double>> totals_of(const nlohmann::json& doc) {
  std::vector<std::pair<std::string, double>> out;
  out.emplace_back("sessions", doc.value("sessions", 0.0));
  out.emplace_back("instances", static_cast<double>(doc["instances"].size()));
  out.emplace_back("invariant_violations", doc.value("invariant_violations", 0.0));
  // Sums `key` of every instance's tree document (or of its "served" part) as `name`.
  auto sum = [&](const nlohmann::json::json_pointer& key, const char* name) {
    double v = 0;
    for (const auto& in : doc["instances"])
      if (in["tree"].contains(key)) v += in["tree"][key].get<double>();
    out.emplace_back(name, v);
  };
  using ptr = nlohmann::json::json_pointer;
  const std::pair<const char*, const char*> tree_totals[] = {
      {"live_requests", "live_requests"},        {"kv_capacity", "kv_tokens_capacity"},
      {"kv_available", "kv_tokens_free"},        {"full_evictable", "kv_tokens_evictable"},
      {"full_protected", "kv_tokens_protected"}, {"slot_capacity", "ssm_slots_capacity"},
      {"slot_available", "ssm_slots_free"},      {"mamba_evictable", "ssm_slots_evictable"},
      {"mamba_protected", "ssm_slots_protected"}};
  for (const auto& [key, name] : tree_totals)
    sum(ptr() / key, name);
  for (const char* k : {"steps", "commands", "command_errors", "matches", "matched_kv_tokens",
                        "matched_resumable_tokens", "lookups", "inserted_tokens", "evicted_tokens",
                        "evicted_slots", "pressure_evicted_tokens", "pressure_evicted_slots",
                        "tombstones_by_eviction", "tombstones_by_split"})
    sum(ptr("/served") / k, k);
  return out;
}

/// Gathers every actor's inspect JSON into one document, and the node's totals.
void gather_stats(caf::event_based_actor* self, node_state& st, const msg::stats_ptr& job) {
  struct fan_in {
    msg::stats_ptr job;
    nlohmann::json doc;
    std::size_t pending = 0;
  };
  auto f = std::make_shared<fan_in>();
  f->job = job;
  {
    std::lock_guard lk(st.registry->mu);
    f->doc["sessions"] = st.registry->sessions.size();
  }
  f->doc["invariant_violations"] = invariant_violations();
  f->doc["first_invariant_violation"] = first_invariant_violation();
  f->doc["host_storage"] = nullptr;
  f->doc["instances"] = nlohmann::json::array();
  f->pending = 1 + 2 * st.instances.size();
  auto finish = [f] {
    if (--f->pending != 0) return;
    f->job->stats = totals_of(f->doc);
    f->job->inspect_json = f->doc.dump();
    f->job->complete();
  };
  auto on_err = [finish](caf::error&) { finish(); };
  // An actor's inspect reply is JSON; a malformed one shows as a string, never throws.
  auto parse = [](const std::string& s) {
    auto j = nlohmann::json::parse(s, nullptr, /*allow_exceptions=*/false);
    return j.is_discarded() ? nlohmann::json(s) : j;
  };
  self->request(st.host, caf::infinite, msg::inspect_atom::value)
      .then(
          [f, finish, parse](std::string& s) {
            f->doc["host_storage"] = parse(s);
            finish();
          },
          on_err);
  std::size_t i = 0;
  for (const auto& [fp, in] : st.instances) {
    f->doc["instances"].push_back({{"fingerprint", fp}, {"tree", nullptr}, {"stream", nullptr}});
    const std::pair<const char*, caf::actor> parts[] = {{"tree", in.radix}, {"stream", in.stream}};
    for (const auto& [part, a] : parts) {
      self->request(a, caf::infinite, msg::inspect_atom::value)
          .then(
              [f, finish, parse, i, part](std::string& s) {
                f->doc["instances"][i][part] = parse(s);
                finish();
              },
              on_err);
    }
    ++i;
  }
}

/// Completes `job` once every instance's radix_cache reports no tier work in flight.
void drain(caf::event_based_actor* self, const node_state& st, const msg::drain_ptr& job) {
  auto pending = std::make_shared<std::size_t>(st.instances.size() + 1);
  auto finish = [job, pending] {
    if (--*pending == 0) job->complete();
  };
  for (const auto& [fp, in] : st.instances)
    self->request(in.radix, caf::infinite, msg::drain_atom::value)
        .then([finish](bool) { finish(); }, [finish](caf::error&) { finish(); });
  finish();
}

/// A session of instance `id` is gone; destroys the longest-idle instances beyond the
/// node's max_idle_instances. Their actors hold the pools, which unmap and unlink when
/// the actors end (a worker's own mapping stays valid until it unmaps).
void session_detached(caf::event_based_actor* self, node_state& st, std::uint64_t id) {
  for (auto& [fp, in] : st.instances)
    if (in.id == id && in.sessions > 0 && --in.sessions == 0) in.idle_since = ++st.tick;
  for (;;) {
    std::size_t idle = 0;
    auto oldest = st.instances.end();
    for (auto it = st.instances.begin(); it != st.instances.end(); ++it) {
      if (it->second.sessions != 0) continue;
      ++idle;
      if (oldest == st.instances.end() || it->second.idle_since < oldest->second.idle_since)
        oldest = it;
    }
    if (idle <= st.cfg.max_idle_instances) return;
    self->send_exit(oldest->second.radix, caf::exit_reason::user_shutdown);
    self->send_exit(oldest->second.stream, caf::exit_reason::user_shutdown);
    st.cfg.metrics->instance_closed(oldest->second.id);
    st.instances.erase(oldest);
  }
}

caf::behavior node_actor(caf::event_based_actor* self, node_config cfg,
                         session_registry* registry) {
  auto st = std::make_shared<node_state>();
  st->cfg = std::move(cfg);
  st->registry = registry;
  // Blocking L3 I/O: on its own thread, never on the scheduler's.
  st->host = self->spawn<caf::detached>(host_storage_actor, st->cfg.l3, st->cfg.metrics,
                                        st->cfg.time_source);
  return {
      [self, st](msg::open_atom, const msg::open_ptr& job) { open_session(self, *st, job); },
      [self, st](msg::stats_atom, const msg::stats_ptr& job) { gather_stats(self, *st, job); },
      [self, st](msg::drain_atom, const msg::drain_ptr& job) { drain(self, *st, job); },
      [self, st](msg::ext_store_atom, const msg::store_ptr& job) {
        self->send(st->host, msg::ext_store_atom::value, job);  // its I/O thread completes it
      },
      [self, st](msg::detached_atom, std::uint64_t instance_id) {
        session_detached(self, *st, instance_id);
      },
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
  if (impl_->cfg.time_source == nullptr) impl_->cfg.time_source = &steady();
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
  j->started_ns = static_cast<std::uint64_t>(impl_->cfg.time_source->now().count());
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

void node::submit(std::shared_ptr<drain_job> j) {
  if (impl_->refuse_if_down(j)) return;
  caf::anon_send(impl_->root, msg::drain_atom::value, std::move(j));
}

void node::submit(std::shared_ptr<store_job> j) {
  if (impl_->refuse_if_down(j)) return;
  caf::anon_send(impl_->root, msg::ext_store_atom::value, std::move(j));
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
