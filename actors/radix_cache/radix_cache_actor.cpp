#include "actors/radix_cache/radix_cache_actor.hpp"

#include <memory>
#include <string>
#include <unordered_map>

#include "actors/node/messages.hpp"
#include "actors/scheduler/command_executor.hpp"

namespace hc {
namespace {

struct session_state {
  std::unique_ptr<request_manager> requests;
  namespace_id ns = 0;  ///< every command of the session runs in its namespace
};

struct state {
  std::unique_ptr<radix_cache> cache;
  std::unordered_map<session_id, session_state> sessions;
  /// Namespace names (InstanceSpec.namespace: LoRA adapter / cache salt) -> tree ids;
  /// "" is the default namespace 0. Sessions naming the same namespace share prefixes.
  std::unordered_map<std::string, namespace_id> namespaces{{"", 0}};
  std::uint64_t instance = 0;
  caf::actor stream;
  metrics_sink* metrics = nullptr;
};

void report(state& st, std::span<const command> cmds, std::span<const command_result> res) {
  metrics_sink& m = *st.metrics;
  for (std::size_t i = 0; i < cmds.size(); ++i) {
    const command_result& r = res[i];
    if (!r.ok()) {
      m.command_error(to_string(cmds[i].kind));
      continue;
    }
    switch (cmds[i].kind) {
      case cmd_kind::match:
        m.l1_match(r.kv_matched, r.prefix_len);
        break;
      case cmd_kind::evict:
        m.evicted("explicit", r.tokens_freed_total, r.slots_freed_total);
        break;
      case cmd_kind::take_ops:
        m.forward_ops(r.ops_snapshots, r.ops_clears, r.ops_cows);
        break;
      case cmd_kind::cache_unfinished:
      case cmd_kind::finish:
        if (r.inserted) m.inserted_tokens(r.prefix_len);
        break;
      default:
        break;
    }
  }
  const radix_cache& c = *st.cache;
  const tree_sizes& s = c.tree().sizes();
  pool_gauges g;
  g.kv_capacity = c.kv().capacity();
  g.kv_used = g.kv_capacity - c.kv().available();
  g.kv_evictable = s.full_evictable;
  g.kv_protected = s.full_protected;
  g.slot_capacity = c.slots().capacity();
  g.slot_used = g.slot_capacity - c.slots().available();
  g.slot_evictable = s.mamba_evictable;
  g.slot_protected = s.mamba_protected;
  m.pools(st.instance, g);
}

std::string inspect(const state& st) {
  const radix_cache& c = *st.cache;
  const tree_sizes& s = c.tree().sizes();
  std::string live;
  std::size_t reqs = 0;
  for (const auto& [id, m] : st.sessions)
    reqs += m.requests->live_requests();
  return "{\"instance\":" + std::to_string(st.instance) +
         ",\"page_size\":" + std::to_string(c.page_size()) +
         ",\"nodes\":" + std::to_string(c.tree().node_count()) +
         ",\"leaves\":" + std::to_string(c.tree().leaf_count()) +
         ",\"kv_capacity\":" + std::to_string(c.kv().capacity()) +
         ",\"kv_available\":" + std::to_string(c.kv().available()) +
         ",\"slot_capacity\":" + std::to_string(c.slots().capacity()) +
         ",\"slot_available\":" + std::to_string(c.slots().available()) +
         ",\"full_evictable\":" + std::to_string(s.full_evictable) +
         ",\"full_protected\":" + std::to_string(s.full_protected) +
         ",\"mamba_evictable\":" + std::to_string(s.mamba_evictable) +
         ",\"mamba_protected\":" + std::to_string(s.mamba_protected) +
         ",\"sessions\":" + std::to_string(st.sessions.size()) +
         ",\"live_requests\":" + std::to_string(reqs) + "}";
}

}  // namespace

caf::behavior radix_cache_actor(caf::event_based_actor* self, cache_config cfg,
                                std::uint64_t instance_id, caf::actor forward_stream,
                                metrics_sink* metrics) {
  auto st = std::make_shared<state>();
  st->cache = std::make_unique<radix_cache>(cfg);
  st->instance = instance_id;
  st->stream = std::move(forward_stream);
  st->metrics = metrics;
  return {
      [st](msg::attach_atom, session_id s, const request_config& rc, const std::string& ns) {
        auto [it, fresh] =
            st->namespaces.try_emplace(ns, static_cast<namespace_id>(st->namespaces.size()));
        (void)fresh;
        st->sessions[s] = {std::make_unique<request_manager>(rc, *st->cache), it->second};
      },
      [st, self](msg::step_atom, const msg::step_ptr& job) {
        auto it = st->sessions.find(job->session);
        if (it == st->sessions.end()) {
          job->err = {errc::not_found, "session " + std::to_string(job->session) + " is closed"};
          job->complete();
          return;
        }
        const session_id sid = job->session;
        for (command& c : job->cmds)
          c.ns = it->second.ns;
        execute_batch(*it->second.requests, *st->cache, job->cmds, job->results,
                      [&](const command& c, forward_ops&& ops) {
                        // Enqueued before the step's reply: the worker's begin_forward for
                        // this batch cannot overtake these ops (causal mailbox order).
                        self->send(st->stream, msg::ops_atom::value, sid, c.batch, std::move(ops));
                      });
        report(*st, job->cmds, job->results);
        job->complete();
      },
      [st](msg::detach_atom, const msg::close_ptr& job) {
        auto it = st->sessions.find(job->session);
        if (it != st->sessions.end()) {
          request_manager& m = *it->second.requests;
          for (request_handle h : m.live_handles())
            (void)m.abort(h);  // releases locks, KV and slots without insert
          st->sessions.erase(it);
        }
        job->complete();
      },
      [st](msg::inspect_atom) -> std::string { return inspect(*st); },
  };
}

}  // namespace hc
