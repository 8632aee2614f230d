// The scheduler actor: the node's sessions and instances (architecture.md §1). It opens a
// session on the instance its spec names (creating the instance, its pools and its
// radix_cache — which spawns the instance's forward_stream — on first use), registers the
// session's route for the entry points, counts sessions per instance and destroys the
// longest-idle instances, and answers stats and drain by asking every instance.
// Steps, fences, byte access and external Store calls never pass through it: they go from
// the caller's thread straight to the session's radix_cache or forward_stream, or to the
// node's host_storage (node.cpp).
#include "actors/node/scheduler_actor.hpp"
#include "actors/node/inspect_document.hpp"
#include "actors/node/json_text.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/common/invariant.hpp"
#include "actors/common/log.hpp"
#include "actors/node/actor_watch.hpp"
#include "actors/node/forward_stream_actor.hpp"
#include "actors/node/host_memory.hpp"
#include "actors/node/instance_events.hpp"
#include "actors/node/messages.hpp"
#include "actors/node/radix_cache_actor.hpp"
#include "gpu/anonymous_memory.hpp"
#include "gpu/cuda_l1_pool.hpp"
#include "gpu/shm_l1_pool.hpp"
#include "gpu/shm_region.hpp"
#include "storage/l3_keys.hpp"
#include "storage/sha256_page_hasher.hpp"

namespace hc {
namespace {

struct instance {
  std::uint64_t id = 0;
  msg::cache_actor radix;        ///< owns the tree and the sessions' request tables
  msg::stream_actor stream;      ///< its forward_stream (spawned by radix, linked to it)
  l1_pool_names pool_names;      ///< where its L1 pools are (what a worker maps)
  std::size_t sessions = 0;      ///< open sessions
  std::uint64_t idle_since = 0;  ///< node tick when the last session closed
  bool retired = false;          ///< its shm names were removed: no new session; dropped when idle
  std::shared_ptr<instance_events> events;  ///< its KV events (null: none); muted when retired
  std::string pools_summary;                ///< its pools, as its log line names them
};

struct node_state {
  node_config cfg;
  /// Tokens held by live requests over every session (node_config::max_request_tokens).
  std::shared_ptr<token_budget> live_tokens;
  session_registry* registry = nullptr;
  std::unordered_map<std::string, instance> instances;
  msg::storage_actor host;
  session_id next_session = 0;
  std::uint64_t next_instance = 0;
  std::uint64_t tick = 0;
  /// When the node started, for inspect's "node" (its uptime by the steady clock).
  std::chrono::system_clock::time_point started_at = std::chrono::system_clock::now();
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

/// The L2 pools' bytes: mapped and populated by the kernel (a large pool in seconds, not
/// minutes of page faults), committed at open as the §5.1 memory check assumes.
host_bytes mapped_host_bytes(std::size_t n) {
  if (n == 0) return {};
  std::shared_ptr<std::byte> p = map_anonymous(n);
  return {p, {p.get(), n}};
}

/// The L2 pools and L3 access of a new instance (§5.1 sizing); none without a host tier.
/// `memory`: host memory the L2 pools may take (0: unchecked).
result<tier_wiring> make_tiers(node_state& st, const instance_spec& spec, cache_config& cc,
                               std::uint64_t memory) {
  tier_wiring w;
  w.time = st.cfg.time_source;
  if (!spec.host_tier()) return w;
  host_pool_request req = host_pool_request_of(spec);
  req.host_ram_available = memory;
  auto sizes = size_host_pools(req);
  if (!sizes) return sizes.err();
  cc.host_kv_tokens = sizes->kv_tokens;
  cc.host_slots = sizes->slots;
  w.host = std::make_shared<host_pools>(*sizes, spec.page_size, mapped_host_bytes);
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

/// The instance's L1 pools hold one more page and slot than the spec's usable ones (page
/// 0 and slot 0 are reserved).
std::size_t l1_pool_tokens(const instance_spec& spec) {
  return spec.kv_tokens + spec.page_size;
}
std::size_t l1_pool_slots(const instance_spec& spec) {
  return spec.ssm_slots + 1;
}

/// The instance's L1 pools' bytes; the host memory they take (l1_host_bytes): those bytes
/// in /dev/shm on the CPU device, none on a GPU. The spec's limits (max_pool_bytes) keep
/// the products far from overflow.
std::uint64_t l1_pool_bytes(const instance_spec& spec) {
  return std::uint64_t{l1_pool_tokens(spec)} * spec.kv_bytes_per_token +
         std::uint64_t{l1_pool_slots(spec)} * spec.ssm_slot_bytes;
}
std::uint64_t l1_host_bytes(const instance_spec& spec) {
  return spec.device == device_kind::cuda ? 0 : l1_pool_bytes(spec);
}

/// The instance's L1 pools on its device (in shared memory: mapped by `access`).
result<std::shared_ptr<l1_pool>> make_pools(const instance_spec& spec, const std::string& base,
                                            shm_access access) {
  const std::size_t tokens = l1_pool_tokens(spec), slots = l1_pool_slots(spec);
  if (spec.device == device_kind::cuda) {
    auto p = make_cuda_l1_pool(
        {spec.device_ordinal, tokens, spec.kv_bytes_per_token, slots, spec.ssm_slot_bytes});
    if (!p) return p.err();
    return std::shared_ptr<l1_pool>(std::move(*p));
  }
  auto p = shm_l1_pool::create(base + "-kv", tokens, spec.kv_bytes_per_token, base + "-ssm", slots,
                               spec.ssm_slot_bytes, access);
  if (!p) return p.err();
  return std::shared_ptr<l1_pool>(std::move(*p));
}

/// An instance's pools in a log line: their sizes, where its L1 pools are, its L2 pools.
std::string describe_pools(const instance_spec& spec, const cache_config& cc) {
  const auto mib = [](std::uint64_t b) { return std::to_string((b + (1u << 20) - 1) >> 20); };
  return std::to_string(spec.kv_tokens) + " KV tokens and " + std::to_string(spec.ssm_slots) +
         " SSM slots, " + mib(l1_pool_bytes(spec)) + " MiB of L1 pools " +
         (spec.device == device_kind::cuda ? "on cuda:" + std::to_string(spec.device_ordinal)
                                           : std::string("in /dev/shm")) +
         (spec.host_tier() ? "; L2 pools of " + std::to_string(cc.host_kv_tokens) +
                                 " KV tokens and " + std::to_string(cc.host_slots) + " slots"
                           : std::string());
}

/// Page digests (L3 keys) of every instance's tree: stateless, so one serves them all.
const sha256_page_hasher page_hashes;

result<instance> build_instance(msg::scheduler_actor_type::pointer self, node_state& st,
                                const instance_spec& spec) {
  cache_config cc = cache_config_of(spec);
  // The L1 pools (in /dev/shm on the CPU device) and the L2 pools must fit together.
  const std::uint64_t memory = memory_for_pools(st.cfg.host_memory_limit);
  const std::uint64_t l1 = l1_host_bytes(spec);
  if (memory > 0 && l1 > memory)
    return error{errc::out_of_memory,
                 "the instance's L1 pools need " + std::to_string(l1) +
                     " bytes of shared memory (kvTokens x kvBytesPerToken + ssmSlots x "
                     "ssmSlotBytes) but the host has " +
                     std::to_string(memory) +
                     " bytes of memory to give (MemAvailable, or what the node's cgroup "
                     "memory limit still allows, less a reserve): smaller pools, or fewer "
                     "instances open"};
  auto tiers = make_tiers(st, spec, cc, memory == 0 ? 0 : std::max<std::uint64_t>(memory - l1, 1));
  if (!tiers) return tiers.err();
  std::shared_ptr<instance_events> events;
  if (st.cfg.kv_events) {  // events with state checkpoints: a router's view of the tree
    cc.enable_events = cc.state_events = true;
    events = std::make_shared<instance_events>(*st.cfg.kv_events);
    tiers->events = events;
    tiers->event_topic = "kv/" + instance_fingerprint(spec) + "/";
  }
  const std::uint64_t id = ++st.next_instance;
  const std::string base = st.cfg.shm_prefix + "-i" + std::to_string(id);
  auto pools = make_pools(spec, base, shm_access_for(st.cfg.group_access));
  if (!pools) return pools.err();
  auto cache = std::make_shared<radix_cache>(cc, &page_hashes);
  instance in;
  in.id = id;
  in.pools_summary = describe_pools(spec, cc);
  in.events = std::move(events);
  in.pool_names = (*pools)->names();
  stream_setup ss{std::move(*pools), spec.page_size,     tiers->host,
                  st.cfg.metrics,    st.cfg.time_source, st.cfg.demo};
  in.radix = self->spawn<caf::linked>(radix_cache_actor, std::move(cache), id, std::move(ss),
                                      caf::actor_cast<msg::scheduler_actor_type>(self),
                                      std::move(*tiers), st.cfg.metrics);
  // Linked both ways: its forward_stream is linked to it, so a failure anywhere ends every
  // actor of the node (the exit handler below), and node::shutdown() never waits for an
  // orphan.
  watch_actor(caf::actor_cast<caf::strong_actor_ptr>(in.radix),
              "the radix_cache actor of instance " + std::to_string(id), st.cfg.on_actor_failure);
  return in;
}

/// A new instance: its pools (L1, L2), its tree and its actors. A spec within the node's
/// limits may still ask for more than the host can allocate: that fails this open with
/// out_of_memory, and the node goes on serving everyone else.
result<instance> make_instance(msg::scheduler_actor_type::pointer self, node_state& st,
                               const instance_spec& spec) {
  try {
    return build_instance(self, st, spec);
  } catch (const std::bad_alloc&) {
    return error{errc::out_of_memory,
                 "the node could not allocate the instance's pools and tables (kvTokens " +
                     std::to_string(spec.kv_tokens) + ", ssmSlots " +
                     std::to_string(spec.ssm_slots) + "): not enough memory"};
  }
}

/// What a worker of instance `in` needs to map its L1 pools.
pool_info pool_info_of(const instance& in, const instance_spec& sp) {
  pool_info info;
  info.instance_id = in.id;
  info.kv_bytes_per_token = sp.kv_bytes_per_token;
  info.ssm_slot_bytes = sp.ssm_slot_bytes;
  info.kv_shm = in.pool_names.kv;
  info.kv_bytes = in.pool_names.kv_bytes;
  info.ssm_shm = in.pool_names.ssm;
  info.ssm_bytes = in.pool_names.ssm_bytes;
  info.device = in.pool_names.device;
  info.device_ordinal = in.pool_names.device_ordinal;
  info.kv_ipc_handle = in.pool_names.kv_ipc;
  info.ssm_ipc_handle = in.pool_names.ssm_ipc;
  return info;
}

/// Ends an instance: its shm names go now (a worker's mapping stays valid); the regions
/// unmap when the actors that hold them end.
/// `why` goes to the log, which names every instance's start and end.
void drop_instance(msg::scheduler_actor_type::pointer self, node_state& st,
                   std::unordered_map<std::string, instance>::iterator it, std::string_view why) {
  log::info("instance " + std::to_string(it->second.id) + " (" + it->first +
            ") ended: " + std::string(why));
  shm_l1_pool::unlink(it->second.pool_names);
  self->send_exit(it->second.radix, caf::exit_reason::user_shutdown);  // and its stream
  st.cfg.metrics->instance_closed(it->second.id);
  st.instances.erase(it);
}

/// The shm names of an instance's L1 pools were removed from under the node: a new worker
/// could not map them, so new sessions of its spec get a fresh instance; the sessions on
/// it (their mappings still valid) go on, and it ends when the last one closes.
void retire(msg::scheduler_actor_type::pointer self, node_state& st,
            std::unordered_map<std::string, instance>::iterator it) {
  st.cfg.metrics->fault("shm_removed");
  log::warn("the shared memory of instance " + std::to_string(it->second.id) + " (" +
            it->second.pool_names.kv + ") was removed from under the node; its " +
            std::to_string(it->second.sessions) + " sessions go on, new ones get a fresh instance");
  // A fresh instance of the same spec takes its topics: from here on its own events go
  // nowhere, before the successor publishes anything.
  if (it->second.events) it->second.events->mute();
  if (it->second.sessions == 0)
    return drop_instance(self, st, it, "its shared memory was removed, and it had no session");
  instance in = std::move(it->second);
  st.instances.erase(it);
  shm_l1_pool::unlink(in.pool_names);  // what is left of them
  in.retired = true;
  const std::string key = "retired:" + std::to_string(in.id);
  st.instances.emplace(key, std::move(in));
}

/// device cuda: the session's fence events (created by its stream) go into the open's
/// answer. If they cannot be created the open fails and the session is closed again.
void give_fence_events(msg::scheduler_actor_type::pointer self, const msg::open_ptr& job,
                       const msg::cache_actor& radix, const msg::stream_actor& stream) {
  self->request(stream, caf::infinite, msg::events_atom::value, job->session)
      .then(
          [self, job, radix](std::string& ready, std::string& done, std::string& err) {
            if (err.empty()) {
              job->info.ready_event_ipc_handle = std::move(ready);
              job->info.done_event_ipc_handle = std::move(done);
              return job->complete();
            }
            job->err = {errc::io_error, "the session's CUDA fence events: " + err};
            auto close = std::make_shared<close_job>();
            close->session = job->session;
            self->send(radix, msg::close_atom::value, close);
            job->complete();
          },
          [job](caf::error& e) {
            job->err = {errc::io_error,
                        "the stream did not give fence events: " + caf::to_string(e)};
            job->complete();
          });
}

void open_session(msg::scheduler_actor_type::pointer self, node_state& st,
                  const msg::open_ptr& job) {
  if (status s = validate(job->spec, st.cfg.limits); !s) {
    job->err = s.err();
    return job->complete();
  }
  std::size_t open_sessions = 0;
  for (const auto& [f, i] : st.instances)
    open_sessions += i.sessions;
  if (open_sessions >= st.cfg.max_sessions) {
    job->err = {errc::out_of_memory, "the node serves at most " +
                                         std::to_string(st.cfg.max_sessions) +
                                         " sessions at once (--max-sessions); close one first"};
    return job->complete();
  }
  const session_id sid = ++st.next_session;
  // Before the instance: a failure here leaves nothing behind.
  msg::session_shm shm;
  const auto region = [&](const char* suffix, std::size_t bytes, const char* what,
                          msg::rows_ptr& out) -> bool {
    if (bytes == 0) return true;
    auto r = shm_region::create(st.cfg.shm_prefix + "-s" + std::to_string(sid) + suffix, bytes,
                                shm_access_for(st.cfg.group_access));
    if (!r) {
      job->err = {errc::out_of_memory, std::string(what) + ": " + r.err().message};
      return false;
    }
    out = std::make_shared<shm_region>(std::move(*r));
    return true;
  };
  if (!region("-rows", shared_rows_bytes(job->spec), "the shared request rows", shm.rows) ||
      !region("-tokens", shared_tokens_bytes(job->spec), "the token arena", shm.tokens))
    return job->complete();
  const std::string fp = instance_fingerprint(job->spec);
  auto it = st.instances.find(fp);
  if (it != st.instances.end() && !shm_l1_pool::names_exist(it->second.pool_names)) {
    retire(self, st, it);
    it = st.instances.end();
  }
  if (it == st.instances.end()) {
    auto in = make_instance(self, st, job->spec);
    if (!in) {
      job->err = in.err();
      return job->complete();
    }
    it = st.instances.emplace(fp, *in).first;
    log::info("instance " + std::to_string(it->second.id) + " (" + fp +
              ") opened: " + it->second.pools_summary);
  }
  instance& in = it->second;
  ++in.sessions;
  job->session = sid;
  job->info = pool_info_of(in, job->spec);
  if (shm.rows) {
    job->info.rows_shm = shm.rows->name();
    job->info.rows_bytes = shm.rows->bytes().size();
    job->info.row_width = job->spec.max_context_len;
  }
  if (shm.tokens) {
    job->info.tokens_shm = shm.tokens->name();
    job->info.tokens_bytes = shm.tokens->bytes().size();
  }
  // The instance's radix_cache creates the session's request table, attaches it to its
  // stream and answers with that stream: the session's route (steps to the one, fences
  // and byte access to the other) is registered before the open completes.
  request_config rc = request_config_of(job->spec);
  rc.live_tokens = st.live_tokens;
  self->request(in.radix, caf::infinite, msg::attach_atom::value, sid, std::move(rc), job->spec.ns,
                std::move(shm))
      .then(
          [self, &st, job, fp, id = in.id, radix = in.radix](msg::stream_actor stream) {
            auto at = st.instances.find(fp);
            if (at != st.instances.end() && at->second.id == id) at->second.stream = stream;
            log::debug("session " + std::to_string(job->session) + " opened on instance " +
                       std::to_string(id));
            {
              std::lock_guard lk(st.registry->mu);
              st.registry->sessions.emplace(job->session, session_route{radix, stream});
            }
            st.cfg.metrics->sessions(+1);
            if (job->spec.device != device_kind::cuda) return job->complete();
            give_fence_events(self, job, radix, stream);
          },
          [job](caf::error& e) {
            job->err = {errc::io_error,
                        "the instance did not attach the session: " + caf::to_string(e)};
            job->complete();
          });
}

/// The node's `stats`: sessions, instances and invariant violations, then every
/// instance's instance_stats summed (+=) in its fixed order.
void sum_stats(msg::scheduler_actor_type::pointer self, node_state& st, const msg::stats_ptr& job) {
  struct fan_in {
    msg::stats_ptr job;
    instance_stats total;
    std::size_t pending = 0;
    double sessions = 0, instances = 0;
  };
  auto f = std::make_shared<fan_in>();
  f->job = job;
  {
    std::lock_guard lk(st.registry->mu);
    f->sessions = static_cast<double>(st.registry->sessions.size());
  }
  f->instances = static_cast<double>(st.instances.size());
  f->pending = st.instances.size() + 1;
  auto finish = [f] {
    if (--f->pending != 0) return;
    auto& out = f->job->stats;
    out.emplace_back("sessions", f->sessions);
    out.emplace_back("instances", f->instances);
    out.emplace_back("invariant_violations", static_cast<double>(invariant_violations()));
    instance_stats::for_each_field(
        [&](std::string_view name, std::string_view, std::uint64_t instance_stats::*m, bool) {
          out.emplace_back(std::string(name), static_cast<double>(f->total.*m));
        });
    f->job->complete();
  };
  for (const auto& [fp, in] : st.instances)
    self->request(in.radix, caf::infinite, msg::stats_atom::value)
        .then(
            [f, finish](const instance_stats& s) {
              f->total += s;
              finish();
            },
            [finish](caf::error&) { finish(); });
  finish();
}

/// Gathers every actor's inspect JSON into one document. The instances' parts are spliced in
/// as the text they came as, and their device pages written straight into it.
void gather_inspect(msg::scheduler_actor_type::pointer self, node_state& st,
                    const msg::stats_ptr& job) {
  struct fan_in {
    msg::stats_ptr job;
    nlohmann::json doc;
    std::vector<inspect_part> instances;
    std::size_t pending = 0;
  };
  auto f = std::make_shared<fan_in>();
  f->job = job;
  {
    std::lock_guard lk(st.registry->mu);
    f->doc["sessions"] = st.registry->sessions.size();
  }
  f->doc["node"] = node_document(
      st.cfg.about, st.started_at,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - st.started).count(),
      static_cast<long>(::getpid()));
  f->doc["invariant_violations"] = invariant_violations();
  f->doc["first_invariant_violation"] = first_invariant_violation();
  f->doc["host_storage"] = nullptr;
  if (st.cfg.kv_events)
    f->doc["kv_events"] = {{"last_sequence", st.cfg.kv_events->last_sequence()}};
  f->pending = 1;
  for (const auto& [fp, in] : st.instances)
    f->pending += in.stream ? 2 : 1;
  auto finish = [f, max_blocks = st.cfg.max_inspect_blocks] {
    if (--f->pending != 0) return;
    if (status s = assemble_inspect(f->doc, f->instances, max_blocks, f->job->inspect_json); !s)
      f->job->err = s.err();
    f->job->complete();
  };
  auto on_err = [finish](caf::error&) { finish(); };
  // The host's reply is small JSON; a malformed one shows as a string, never throws.
  self->request(st.host, caf::infinite, msg::inspect_atom::value)
      .then(
          [f, finish](std::string& s) {
            auto j = nlohmann::json::parse(s, nullptr, /*allow_exceptions=*/false);
            f->doc["host_storage"] = j.is_discarded() ? nlohmann::json(s) : std::move(j);
            finish();
          },
          on_err);
  for (const auto& [fp, in] : st.instances) {
    const std::size_t i = f->instances.size();
    f->instances.emplace_back().fingerprint = fp;
    self->request(in.radix, caf::infinite, msg::inspect_atom::value, job->inspect_blocks,
                  st.cfg.max_inspect_blocks)
        .then(
            [f, finish, i](std::string& text, msg::block_listing_ptr& blocks) {
              f->instances[i].tree = std::move(text);
              f->instances[i].blocks = std::move(blocks);
              finish();
            },
            on_err);
    if (in.stream)  // known once the instance attached a session
      self->request(in.stream, caf::infinite, msg::inspect_atom::value)
          .then(
              [f, finish, i](std::string& text) {
                f->instances[i].stream = std::move(text);
                finish();
              },
              on_err);
  }
}

/// Completes `job` once every instance's radix_cache reports no tier work in flight.
void drain(msg::scheduler_actor_type::pointer self, const node_state& st,
           const msg::drain_ptr& job) {
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
/// node's max_idle_instances: their shared-memory names are unlinked at once, their
/// actors (which hold the mappings) are told to end (a worker's own mapping stays valid
/// until it unmaps).
void session_detached(msg::scheduler_actor_type::pointer self, node_state& st, std::uint64_t id) {
  for (auto it = st.instances.begin(); it != st.instances.end(); ++it) {
    instance& in = it->second;
    if (in.id != id || in.sessions == 0 || --in.sessions != 0) continue;
    in.idle_since = ++st.tick;
    if (in.retired) {  // nobody can attach to it any more
      drop_instance(self, st, it,
                    "its shared memory had been removed, and its last session closed");
      break;
    }
  }
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
    drop_instance(self, st, oldest,
                  "the longest idle of " + std::to_string(idle) +
                      " instances without a session, more than --max-idle-instances (" +
                      std::to_string(st.cfg.max_idle_instances) +
                      ") keeps: its cached prefixes are gone");
  }
}

}  // namespace

msg::scheduler_actor_type::behavior_type scheduler_actor(msg::scheduler_actor_type::pointer self,
                                                         node_config cfg,
                                                         session_registry* registry,
                                                         msg::storage_actor host) {
  auto st = std::make_shared<node_state>();
  st->cfg = std::move(cfg);
  st->live_tokens = std::make_shared<token_budget>(st->cfg.max_request_tokens);
  st->registry = registry;
  st->host = std::move(host);
  self->link_to(st->host);  // either one's failure ends the other
  // A linked actor that ends: an instance dropped when idle (user_shutdown) is routine;
  // anything else is a failure (actor_watch.hpp) and ends the scheduler, and through the
  // links every other actor, with the same reason.
  self->set_exit_handler([self](caf::exit_msg& m) {
    if (m.reason && m.reason != caf::make_error(caf::exit_reason::user_shutdown))
      self->quit(m.reason);
  });
  return {
      [self, st](msg::open_atom, const msg::open_ptr& job) { open_session(self, *st, job); },
      [self, st](msg::stats_atom, const msg::stats_ptr& job) {
        if (job->want_inspect) {
          gather_inspect(self, *st, job);
        } else {
          sum_stats(self, *st, job);
        }
      },
      [self, st](msg::drain_atom, const msg::drain_ptr& job) { drain(self, *st, job); },
      [self, st](msg::detached_atom, std::uint64_t instance_id, const msg::close_ptr& job) {
        log::debug("session " + std::to_string(job->session) + " of instance " +
                   std::to_string(instance_id) + " closed");
        session_detached(self, *st, instance_id);
        job->complete();
      },
      [self, st](msg::shutdown_atom) {
        for (const auto& [fp, in] : st->instances)
          self->send_exit(in.radix, caf::exit_reason::user_shutdown);  // and its stream
        self->send_exit(st->host, caf::exit_reason::user_shutdown);
        self->quit();
      },
  };
}

}  // namespace hc
