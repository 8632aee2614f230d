#include "actors/node/radix_cache_actor.hpp"
#include "actors/node/inspect_document.hpp"
#include "actors/node/json_text.hpp"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "actors/node/messages.hpp"
#include "actors/scheduler/shared_tokens.hpp"
#include "actors/scheduler/step.hpp"

namespace hc {
namespace {

struct session_state {
  msg::session_shm shm;  ///< shared rows and token arena (null: none); outlive `requests`
  std::span<const token_id> arena;  ///< the token arena's tokens (empty: none)
  std::unique_ptr<request_manager> requests;
  namespace_id ns = 0;  ///< every command of the session runs in its namespace
};

/// What the instance served since it started (hcctl stats; /metrics has the same counts).
struct served_counters {
  std::uint64_t steps = 0, commands = 0, command_errors = 0;
  std::uint64_t matches = 0, matched_kv_tokens = 0, matched_resumable_tokens = 0, lookups = 0;
  std::uint64_t queried_tokens = 0;  ///< the matches' keys (request_manager::queried_tokens)
  std::uint64_t inserted_tokens = 0;
  std::uint64_t explicit_evicted_tokens = 0, explicit_evicted_slots = 0;
};

struct state {
  served_counters served;
  std::shared_ptr<kv_event_sink> events;  ///< the instance's KV events (null: off)
  std::set<namespace_id> announced;       ///< namespaces whose topic got its opening clear
  std::string event_topic;                ///< + the namespace's name
  std::shared_ptr<radix_cache> cache;     ///< this actor is its only user
  /// The tokens its sessions' pins hold (max_pinned_share of the KV pool at most).
  std::shared_ptr<token_budget> pinned_tokens;
  std::unique_ptr<tier_pipeline> tiers;
  std::unordered_map<session_id, session_state> sessions;
  /// Namespace names (InstanceSpec.namespace: LoRA adapter / cache salt) -> tree ids;
  /// "" is the default namespace 0. Sessions naming the same namespace share prefixes.
  std::unordered_map<std::string, namespace_id> namespaces{{"", 0}};
  std::uint64_t instance = 0;
  msg::stream_actor stream;
  msg::scheduler_actor_type owner;
  metrics_sink* metrics = nullptr;
  const clock* time = &steady();  ///< the node's clock (times each command)
  /// The tree's host evictions already reported to `metrics` (they also happen between
  /// steps, as the tier pipeline makes room; each step reports what is new).
  std::uint64_t host_evicted_tokens_reported = 0, host_evicted_slots_reported = 0;
};

/// Publishes the tree's events since the last call, one batch per namespace (its topic);
/// AllBlocksCleared goes to every namespace.
void publish_events(state& st) {
  if (st.events == nullptr) return;
  std::vector<kv_event> ev = st.cache->tree().drain_events();
  if (ev.empty()) return;
  std::map<namespace_id, std::vector<kv_event>> by_ns;
  for (kv_event& e : ev) {
    if (e.type == kv_event::kind::all_blocks_cleared) {
      for (const auto& [name, id] : st.namespaces)
        by_ns[id].push_back(e);
      continue;
    }
    by_ns[e.ns].push_back(std::move(e));
  }
  for (const auto& [name, id] : st.namespaces) {
    auto it = by_ns.find(id);
    if (it != by_ns.end()) st.events->publish(st.event_topic + name, it->second);
  }
}

/// AllBlocksCleared on the topic of namespace `name`.
void publish_clear(state& st, const std::string& name) {
  kv_event cleared;
  cleared.type = kv_event::kind::all_blocks_cleared;
  st.events->publish(st.event_topic + name, std::span<const kv_event>(&cleared, 1));
}

/// The instance ends (dropped when idle or retired, or the node stops): its pages leave
/// the device with it, so each of its namespaces' topics gets AllBlocksCleared — a router
/// that follows them does not keep sending prompts here for pages that are gone.
void publish_cleared(state& st) {
  if (st.events == nullptr) return;
  publish_events(st);  // what the tree has not said yet goes first
  for (const auto& [name, id] : st.namespaces)
    if (st.announced.contains(id)) publish_clear(st, name);  // the topics it published on
}

/// What the instance's sessions' pins hold: the pins, and their pinned lengths summed.
std::pair<std::uint64_t, std::uint64_t> pins_of(const state& st) {
  std::uint64_t pins = 0, tokens = 0;
  for (const auto& [id, ss] : st.sessions) {
    pins += ss.requests->pins();
    tokens += ss.requests->pinned_tokens();
  }
  return {pins, tokens};
}

/// Reports a step. `before`: the tree's counters when the step began; evictions beyond
/// those the step's evict commands made happened inside allocations ("pressure").
/// `queried`: the tokens its matches looked up (request_manager::queried_tokens' growth).
void report(state& st, const tree_counters& before, std::uint64_t queried,
            std::span<const command> cmds, std::span<const command_result> res) {
  metrics_sink& m = *st.metrics;
  served_counters& sv = st.served;
  ++sv.steps;
  sv.queried_tokens += queried;
  if (queried > 0) m.queried_tokens(queried);
  sv.commands += cmds.size();
  std::uint64_t explicit_tokens = 0, explicit_slots = 0;
  const auto explicit_eviction = [&](std::uint64_t tokens, std::uint64_t slots) {
    m.evicted("explicit", tokens, slots);
    explicit_tokens += tokens;
    explicit_slots += slots;
    sv.explicit_evicted_tokens += tokens;
    sv.explicit_evicted_slots += slots;
  };
  for (std::size_t i = 0; i < cmds.size(); ++i) {
    const command_result& r = res[i];
    if (!r.ok()) {
      ++sv.command_errors;
      m.command_error(to_string(kind_of(cmds[i])));
      continue;
    }
    if (const auto* x = r.get_if<res::match>()) {
      ++sv.matches;
      sv.matched_kv_tokens += x->kv_matched;
      sv.matched_resumable_tokens += x->prefix_len;
      m.l1_match(x->kv_matched - x->loaded_tokens, x->prefix_len - x->loaded_tokens);
      if (x->loaded_tokens) m.l2_hit(x->loaded_tokens);
    } else if (r.get_if<res::lookup>()) {
      ++sv.lookups;
    } else if (const auto* e = r.get_if<res::evict>()) {
      explicit_eviction(e->tokens_freed_total, e->slots_freed_total);
    } else if (const auto* d = r.get_if<res::demote>()) {  // what it freed at once
      explicit_eviction(d->demoted_tokens + d->evicted_tokens, d->slots_freed);
    } else if (const auto* t = r.get_if<res::take_ops>()) {
      m.forward_ops(t->snapshots, t->clears, t->cows);
    } else if (const auto* u = r.get_if<res::cache_unfinished>(); u && u->inserted) {
      sv.inserted_tokens += u->protected_len;
      m.inserted_tokens(u->protected_len);
    } else if (const auto* f = r.get_if<res::finish>(); f && f->inserted) {
      sv.inserted_tokens += f->cached_len;
      m.inserted_tokens(f->cached_len);
    }
  }
  const radix_cache& c = *st.cache;
  const tree_counters& now = c.tree().counters();
  const std::uint64_t pressure_tokens =
      now.evicted_tokens - before.evicted_tokens - explicit_tokens;
  const std::uint64_t pressure_slots = now.evicted_slots - before.evicted_slots - explicit_slots;
  if (pressure_tokens || pressure_slots) m.evicted("pressure", pressure_tokens, pressure_slots);
  if (now.tombstones_by_eviction != before.tombstones_by_eviction)
    m.tombstones("eviction", now.tombstones_by_eviction - before.tombstones_by_eviction);
  if (now.tombstones_by_split != before.tombstones_by_split)
    m.tombstones("split", now.tombstones_by_split - before.tombstones_by_split);
  if (now.host_evicted_tokens != st.host_evicted_tokens_reported ||
      now.host_evicted_slots != st.host_evicted_slots_reported) {
    m.host_evicted(now.host_evicted_tokens - st.host_evicted_tokens_reported,
                   now.host_evicted_slots - st.host_evicted_slots_reported);
    st.host_evicted_tokens_reported = now.host_evicted_tokens;
    st.host_evicted_slots_reported = now.host_evicted_slots;
  }
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
  std::tie(g.pins, g.kv_pinned) = pins_of(st);
  if (c.has_host_tier()) {
    g.host = true;
    g.host_kv_capacity = c.host_kv().capacity();
    g.host_kv_used = g.host_kv_capacity - c.host_kv().available();
    g.host_slot_capacity = c.host_slots().capacity();
    g.host_slot_used = g.host_slot_capacity - c.host_slots().available();
  }
  m.pools(st.instance, g);
}

/// Hands the tier work of a step of session `s` to the pipeline; a slot that any session
/// still has to snapshot into is not backed up yet.
void pump_tiers(state& st, session_id s) {
  st.tiers->pump(s, [&st](slot_id slot) {
    for (const auto& [id, ss] : st.sessions)
      if (ss.requests->snapshot_pending_into(slot)) return true;
    return false;
  });
}

/// What the instance holds and served, as numbers.
instance_stats stats_of(const state& st) {
  const radix_cache& c = *st.cache;
  const tree_sizes& s = c.tree().sizes();
  const tree_counters& tc = c.tree().counters();
  const served_counters& sv = st.served;
  instance_stats out;
  for (const auto& [id, m] : st.sessions)
    out.live_requests += m.requests->live_requests();
  std::tie(out.pins, out.pinned_tokens) = pins_of(st);
  out.kv_capacity = c.kv().capacity();
  out.kv_available = c.kv().available();
  out.full_evictable = s.full_evictable;
  out.full_protected = s.full_protected;
  out.slot_capacity = c.slots().capacity();
  out.slot_available = c.slots().available();
  out.mamba_evictable = s.mamba_evictable;
  out.mamba_protected = s.mamba_protected;
  out.steps = sv.steps;
  out.commands = sv.commands;
  out.command_errors = sv.command_errors;
  out.matches = sv.matches;
  out.queried_tokens = sv.queried_tokens;
  out.matched_kv_tokens = sv.matched_kv_tokens;
  out.matched_resumable_tokens = sv.matched_resumable_tokens;
  out.lookups = sv.lookups;
  out.inserted_tokens = sv.inserted_tokens;
  out.evicted_tokens = tc.evicted_tokens;
  out.evicted_slots = tc.evicted_slots;
  out.pressure_evicted_tokens = tc.evicted_tokens - sv.explicit_evicted_tokens;
  out.pressure_evicted_slots = tc.evicted_slots - sv.explicit_evicted_slots;
  out.tombstones_by_eviction = tc.tombstones_by_eviction;
  out.tombstones_by_split = tc.tombstones_by_split;
  if (c.has_host_tier()) {
    out.host_kv_capacity = c.host_kv().capacity();
    out.host_kv_available = c.host_kv().available();
    out.host_slot_capacity = c.host_slots().capacity();
    out.host_slot_available = c.host_slots().available();
  }
  out.backed_up_tokens = tc.backed_up_tokens;
  out.loaded_back_tokens = tc.loaded_back_tokens;
  out.demoted_tokens = tc.demoted_tokens;
  out.host_evicted_tokens = tc.host_evicted_tokens;
  out.host_evicted_slots = tc.host_evicted_slots;
  return out;
}

/// The instance's part of `inspect` as JSON text; with `blocks`, also its device pages
/// (rendered by the scheduler: this actor only does what needs the tree) — or why not,
/// when it holds more than `max_blocks`.
std::pair<std::string, msg::block_listing_ptr> inspect(state& st, bool blocks,
                                                       std::uint64_t max_blocks) {
  const radix_cache& c = *st.cache;
  const instance_stats stats = stats_of(st);
  nlohmann::json doc = {{"instance", st.instance},
                        {"page_size", c.page_size()},
                        {"nodes", c.tree().node_count()},
                        {"leaves", c.tree().leaf_count()},
                        {"sessions", st.sessions.size()}};
  nlohmann::json served = nlohmann::json::object();
  instance_stats::for_each_field([&](std::string_view, std::string_view name,
                                     std::uint64_t instance_stats::*f, bool is_served) {
    if (!name.empty()) (is_served ? served : doc)[std::string(name)] = stats.*f;
  });
  doc["served"] = std::move(served);
  doc["host"] = nlohmann::json::parse(st.tiers->inspect());
  if (!blocks) return {json_text(doc), nullptr};
  doc["event_topic"] = st.event_topic;
  auto listing = std::make_shared<block_listing>();
  if (const std::uint64_t pages = c.tree().device_page_count(); pages > max_blocks) {
    listing->refused = too_many_blocks(std::to_string(st.instance), pages, max_blocks);
  } else {  // hashes the pages whose digests the tree does not keep: ~0.1 µs a page
    listing->blocks = c.tree().device_blocks();
    for (const auto& [name, id] : st.namespaces)
      listing->names[id] = name;
  }
  return {json_text(doc), std::move(listing)};
}

}  // namespace

msg::cache_actor::behavior_type radix_cache_actor(msg::cache_actor::pointer self,
                                                  std::shared_ptr<radix_cache> cache,
                                                  std::uint64_t instance_id, stream_setup stream,
                                                  msg::scheduler_actor_type owner,
                                                  tier_wiring tiers, metrics_sink* metrics) {
  msg::stream_actor forward_stream = self->spawn<caf::linked>(
      forward_stream_actor, std::move(stream), caf::actor_cast<msg::cache_actor>(self));
  auto st = std::make_shared<state>();
  st->time = tiers.time;
  st->events = tiers.events;
  st->event_topic = tiers.event_topic;
  st->cache = std::move(cache);
  st->pinned_tokens = make_pin_budget(*st->cache);
  st->tiers =
      std::make_unique<tier_pipeline>(self, *st->cache, forward_stream, std::move(tiers), metrics);
  st->instance = instance_id;
  st->stream = std::move(forward_stream);
  st->owner = std::move(owner);
  st->metrics = metrics;
  // Tier answers change the tree too (load-backs, demotions): their events go out at once.
  st->tiers->after_answer([raw = st.get()] { publish_events(*raw); });
  // As CAF's default (an exit of reason normal is ignored, any other ends the actor with
  // it), and the instance's end is published first.
  self->set_exit_handler([self, st](caf::exit_msg& m) {
    if (!m.reason) return;
    publish_cleared(*st);
    self->quit(m.reason);
  });
  return {
      [st, self](msg::attach_atom, session_id s, const request_config& rc, const std::string& ns,
                 msg::session_shm shm) -> msg::stream_actor {
        auto [it, fresh] =
            st->namespaces.try_emplace(ns, static_cast<namespace_id>(st->namespaces.size()));
        if (fresh) st->tiers->name_namespace(it->second, ns);
        // A topic's first event from this instance: what a predecessor of the same spec
        // (retired, or a node that was killed) left in a subscriber's view is gone.
        if (st->events && st->announced.insert(it->second).second) publish_clear(*st, ns);
        request_config session_cfg = rc;
        session_cfg.snapshots_in_forward_ops = false;  // donation copies go out after each step
        session_cfg.session = s;  // marks what it caches while its forwards run
        session_cfg.pinned_tokens = st->pinned_tokens;  // one limit for the instance
        if (shm.rows) {
          const std::span<std::byte> b = shm.rows->bytes();
          session_cfg.shared_rows = {reinterpret_cast<kv_index*>(b.data()),
                                     b.size() / sizeof(kv_index)};
        }
        session_state& ss = st->sessions[s];
        if (shm.tokens) {
          const std::span<std::byte> b = shm.tokens->bytes();
          ss.arena = {reinterpret_cast<const token_id*>(b.data()), b.size() / sizeof(token_id)};
        }
        ss.shm = std::move(shm);
        ss.requests = std::make_unique<request_manager>(session_cfg, *st->cache);
        ss.ns = it->second;
        self->send(st->stream, msg::attach_atom::value, s);  // before the open completes
        return st->stream;
      },
      [st, self](msg::step_atom, const msg::step_ptr& job) {
        auto it = st->sessions.find(job->session);
        if (it == st->sessions.end()) {
          job->err = {errc::not_found, "session " + std::to_string(job->session) + " is closed"};
          job->complete();
          return;
        }
        const session_id sid = job->session;
        // Tokens passed by reference are copied out of the arena first; a bad range
        // refuses the step before anything of it ran.
        if (status s = resolve_shared_tokens(job->cmds, it->second.arena); !s) {
          job->err = s.err();
          job->complete();
          return;
        }
        const tree_counters before = st->cache->tree().counters();
        for (command& c : job->cmds) {  // the session's namespace, whatever the worker sent
          if (auto* x = std::get_if<cmd::create>(&c)) x->ns = it->second.ns;
          if (auto* x = std::get_if<cmd::lookup>(&c)) x->ns = it->second.ns;
          if (auto* x = std::get_if<cmd::pin>(&c)) x->ns = it->second.ns;
          if (auto* x = std::get_if<cmd::demote>(&c)) x->ns = it->second.ns;
        }
        // Pins whose TTL ended stop holding their prefixes before the step can need room
        // (an idle session's too: any session's step may evict).
        const clock_ns now = st->time->now();
        for (auto& [id, ss] : st->sessions)
          ss.requests->expire_pins(now);
        request_manager& requests = *it->second.requests;
        const std::uint64_t queried_before = requests.queried_tokens();
        step_outcome out = run_step(
            requests, *st->cache, job->cmds, job->results,
            [&](const command& c, command_result& r) {
              return st->tiers->on_command(sid, requests, c, r);
            },
            *st->time);
        report(*st, before, requests.queried_tokens() - queried_before, job->cmds, job->results);
        // Sent in step.hpp's order, before the reply: the session's next begin_forward
        // finds every one of them in the stream's mailbox (causal order).
        for (step_outcome::batch_ops& b : out.ops)
          self->send(st->stream, msg::ops_atom::value, sid, b.batch, std::move(b.ops));
        if (!out.read_after.empty())
          self->send(st->stream, msg::read_after_atom::value, sid, std::move(out.read_after));
        if (!out.donations.empty())
          self->send(st->stream, msg::donate_atom::value, sid, std::move(out.donations));
        // Tier copies are queued before the reply too: a load-back runs before the
        // forward that reads it.
        pump_tiers(*st, sid);
        st->tiers->sweep(sid, &requests);
        publish_events(*st);  // before the reply: a router sees the step's cache first
        job->complete();
      },
      [st, self](msg::close_atom, const msg::close_ptr& job) {
        self->send(st->stream, msg::detach_atom::value, job->session);
        auto it = st->sessions.find(job->session);
        if (it != st->sessions.end()) {
          request_manager& m = *it->second.requests;
          for (request_handle h : m.live_handles())
            (void)m.abort(h);  // releases locks, KV and slots without insert
          m.release_pins();
          m.release_quarantine();  // the stream dropped the session: nothing writes them
          st->sessions.erase(it);
          pump_tiers(*st, job->session);
        }
        st->tiers->sweep(job->session, nullptr);
        publish_events(*st);
        // The scheduler completes the close once its instance bookkeeping is done: when
        // close returns, the instance is idle (or dropped and unlinked) for every caller.
        self->send(st->owner, msg::detached_atom::value, st->instance, job);
      },
      [st](msg::fenced_atom, session_id s, std::uint64_t batch, bool ended) {
        // The session's stream began (or queued the begin of) / ended a forward.
        auto it = st->sessions.find(s);
        if (it == st->sessions.end()) return;
        request_manager& m = *it->second.requests;
        if (ended) {
          m.stream_ended(batch);
        } else {
          m.stream_claimed(batch);
        }
      },
      [st](msg::inspect_atom, bool blocks,
           std::uint64_t max_blocks) -> caf::result<std::string, msg::block_listing_ptr> {
        auto [text, listing] = inspect(*st, blocks, max_blocks);
        return {std::move(text), std::move(listing)};
      },
      [st](msg::stats_atom) -> instance_stats { return stats_of(*st); },
      [st, self](msg::drain_atom) -> caf::result<bool> {
        auto done = self->make_response_promise<bool>();
        st->tiers->when_idle(done);
        return done;
      },
  };
}

}  // namespace hc
