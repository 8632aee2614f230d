#include "actors/node/forward_stream_actor.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>

#include "actors/common/log.hpp"
#include "actors/forward_stream/stream_rules.hpp"
#include "actors/forward_stream/tier_copier.hpp"
#include "actors/node/messages.hpp"

namespace hc {
namespace {

struct tier_counters {
  std::uint64_t bad = 0, bytes_to_host = 0, bytes_to_device = 0;
};

/// The actor's half: the bytes, and the jobs the rules name by ticket. The rules
/// (stream_rules.hpp) decide when each op, copy and answer happens; this only performs
/// their actions in order.
struct state {
  explicit state(race_demo demo) : rules(demo) {}
  stream_rules rules;
  std::shared_ptr<l1_pool> pools;
  std::size_t page_size = 1;
  std::shared_ptr<host_pools> host;
  std::optional<slot_op_runner> ops;  ///< on *pools
  stream_ticket next_ticket = 1;
  std::unordered_map<stream_ticket, msg::fence_ptr> fences;  ///< begins and ends not answered
  struct pending_tier {
    msg::tier_copies copies;
    caf::typed_response_promise<msg::tier_copies> answer;
  };
  std::unordered_map<stream_ticket, pending_tier> tiers;  ///< tier jobs not run yet
  struct copying_tier {
    pending_tier job;
    std::uint64_t started_ns = 0, to_host = 0, to_device = 0;
  };
  /// Tier jobs whose copies are queued on a device and not done yet.
  std::unordered_map<stream_ticket, copying_tier> copying;
  metrics_sink* metrics = nullptr;
  const clock* time = nullptr;
  std::uint64_t now_ns() const { return static_cast<std::uint64_t>(time->now().count()); }
  msg::cache_actor cache;  ///< the instance's radix_cache: told of every begin and end
  tier_counters tier;
  /// The L2 regions page-locked for a device pool's copies; declared after `host` and
  /// `pools`, so unlocked before either goes.
  std::vector<std::shared_ptr<void>> pinned;
};

/// A device pool copies to and from the L2 host pools by DMA: lock them. A failure only
/// costs speed (pageable copies still work): logged, not fatal.
void pin_host_pools(state& st) {
  if (!st.host) return;
  for (std::span<std::byte> region : {st.host->kv_region(), st.host->state_region()}) {
    auto guard = st.pools->pin_host(region);
    if (!guard) {
      hc::log::warn("L2 host pool not page-locked (device copies stay pageable): " +
                    guard.err().message);
    } else if (*guard) {
      st.pinned.push_back(std::move(*guard));
    }
  }
}

/// Answers a tier job whose copies are done, and counts them.
void finish_tier(state& st, stream_ticket t) {
  auto it = st.copying.find(t);
  if (it == st.copying.end()) return;
  state::copying_tier c = std::move(it->second);
  st.copying.erase(it);
  st.tier.bytes_to_host += c.to_host;
  st.tier.bytes_to_device += c.to_device;
  const double seconds = static_cast<double>(st.now_ns() - c.started_ns) * 1e-9;
  if (c.to_host) st.metrics->tier_bytes("l2", "write", c.to_host, seconds);
  if (c.to_device) st.metrics->tier_bytes("l2", "read", c.to_device, seconds);
  c.job.answer.deliver(std::move(c.job.copies));
}

/// Queues a tier job's copies and answers with them once they are done: at once on host
/// pools (the copies are done when queued), from the device pool's completion callback
/// (a message back to this actor) otherwise — the stream never waits on the GPU. Whichever
/// of the callback and this function comes second answers (the flag).
void run_tier(msg::stream_actor::pointer self, state& st, stream_ticket t, state::pending_tier p) {
  state::copying_tier c{std::move(p), st.now_ns(), 0, 0};
  if (st.host) {
    for (const tier_copy& copy : c.job.copies) {
      const bool any =
          !copy.device_kv.empty() || (copy.device_slot != no_slot && copy.host_slot != no_slot);
      const std::uint64_t moved = run_tier_copy(*st.pools, *st.host, copy, /*queue_only=*/true);
      if (any && moved == 0 && (st.pools->token_bytes() || st.pools->slot_bytes())) ++st.tier.bad;
      (copy.dir == tier_copy::direction::device_to_host ? c.to_host : c.to_device) += moved;
    }
  }
  st.copying.emplace(t, std::move(c));
  auto flag = std::make_shared<std::atomic<int>>(0);  // 1: callback ran, 2: we returned
  st.pools->when_done([me = caf::actor_cast<msg::stream_actor>(self), t, flag] {
    if (flag->exchange(1) == 2) caf::anon_send(me, msg::tier_done_atom::value, t);
  });
  if (flag->exchange(2) == 1) finish_tier(st, t);
}

/// A device pool's side of an accepted fence (host pools: nothing). Begin: the forward's
/// ops are queued; `ready` is recorded after them for the worker's stream to wait on.
/// End: the worker recorded `done` after its forward; everything queued on the pool's
/// stream from now on waits for it. Neither waits on the CPU.
status device_fence(state& st, const fence_job& j) {
  return j.begin ? st.pools->record_ready(j.session) : st.pools->wait_done(j.session);
}

/// Performs the rules' actions in their order. A report goes to radix_cache before the
/// answer that follows it, so the worker's next step finds it already in that mailbox.
void perform(msg::stream_actor::pointer self, state& st, stream_actions& actions) {
  for (stream_action_v& a : actions) {
    if (auto* o = std::get_if<stream_action::run_ops>(&a)) {
      st.ops->run(o->ops);
    } else if (auto* t = std::get_if<stream_action::run_tier>(&a)) {
      auto it = st.tiers.find(t->ticket);
      if (it == st.tiers.end()) continue;
      state::pending_tier p = std::move(it->second);
      st.tiers.erase(it);
      run_tier(self, st, t->ticket, std::move(p));
    } else if (auto* r = std::get_if<stream_action::report>(&a)) {
      if (st.cache) self->send(st.cache, msg::fenced_atom::value, r->session, r->batch, r->ended);
    } else if (auto* ans = std::get_if<stream_action::answer>(&a)) {
      auto it = st.fences.find(ans->ticket);
      if (it == st.fences.end()) continue;
      msg::fence_ptr j = std::move(it->second);
      st.fences.erase(it);
      if (!ans->result) {
        j->err = ans->result.err();
      } else if (status dev = device_fence(st, *j); !dev) {
        j->err = dev.err();
      } else if (j->begin) {
        j->waited_ns = st.now_ns() - j->started_ns;
        st.metrics->fence_wait(static_cast<double>(j->waited_ns) * 1e-9);
      }
      j->complete();
    }
  }
  actions.clear();
}

void fence(msg::stream_actor::pointer self, state& st, const msg::fence_ptr& j) {
  const stream_ticket t = st.next_ticket++;
  st.fences.emplace(t, j);
  stream_actions out;
  if (j->begin) {
    st.rules.begin(j->session, j->batch, t, out);
  } else {
    st.rules.end(j->session, j->batch, t, out);
  }
  perform(self, st, out);
}

caf::result<msg::tier_copies> tier(msg::stream_actor::pointer self, state& st, msg::tier_kind kind,
                                   session_id s, msg::tier_copies& copies) {
  const stream_ticket t = st.next_ticket++;
  auto answer = self->make_response_promise<msg::tier_copies>();
  st.tiers.emplace(t, state::pending_tier{std::move(copies), answer});
  stream_actions out;
  st.rules.tier(kind, s, t, out);
  perform(self, st, out);
  return answer;
}

void bytes(state& st, const msg::bytes_ptr& j) {
  if (!st.rules.has_session(j->session)) {
    j->err = {errc::not_found, "session " + std::to_string(j->session) + " is closed"};
    return j->complete();
  }
  l1_pool& p = *st.pools;
  const bool kv = j->op == bytes_job::what::read_kv_page || j->op == bytes_job::what::write_kv_page;
  const bool write =
      j->op == bytes_job::what::write_kv_page || j->op == bytes_job::what::write_slot;
  const std::size_t unit = kv ? p.token_bytes() * st.page_size : p.slot_bytes();
  const std::size_t count = kv ? (p.token_bytes() ? p.kv_tokens() / st.page_size : 0) : p.slots();
  const char* what = kv ? "KV page" : "slot";
  if (unit == 0 || count == 0) {
    j->err = {errc::invalid_argument, std::string("this instance has no ") + what + " bytes"};
    return j->complete();
  }
  if (j->index <= 0 || static_cast<std::size_t>(j->index) >= count) {
    j->err = {errc::invalid_argument, std::string(what) + " " + std::to_string(j->index) +
                                          " is out of range 1.." + std::to_string(count - 1)};
    return j->complete();
  }
  const auto first = static_cast<kv_index>(static_cast<std::size_t>(j->index) * st.page_size);
  const auto slot = static_cast<slot_id>(j->index);  // in range: below the pool's size
  status s;
  if (write) {
    if (j->data.size() != unit) {
      j->err = {errc::invalid_argument, std::string(what) + " payload has " +
                                            std::to_string(j->data.size()) + " bytes, expected " +
                                            std::to_string(unit)};
      return j->complete();
    }
    s = kv ? p.write_kv(first, st.page_size, j->data) : p.write_slot(slot, j->data);
    j->data.clear();
  } else {
    j->data.resize(unit);
    s = kv ? p.read_kv(first, st.page_size, j->data) : p.read_slot(slot, j->data);
  }
  if (!s) j->err = s.err();
  j->complete();
}

}  // namespace

msg::stream_actor::behavior_type forward_stream_actor(msg::stream_actor::pointer self,
                                                      stream_setup setup, msg::cache_actor cache) {
  auto st = std::make_shared<state>(setup.demo);
  st->time = setup.time;
  st->pools = std::move(setup.pools);
  st->page_size = setup.page_size;
  st->ops.emplace(*st->pools);
  st->host = std::move(setup.host);
  pin_host_pools(*st);
  st->metrics = setup.metrics;
  st->cache = std::move(cache);
  return {
      [st](msg::attach_atom, session_id s) { st->rules.attach(s); },
      [st](msg::ops_atom, session_id s, std::uint64_t batch, forward_ops& ops) {
        (void)st->rules.enqueue(s, batch, std::move(ops));  // refused ones are counted
      },
      [self, st](msg::fence_atom, const msg::fence_ptr& j) { fence(self, *st, j); },
      [self, st](msg::tier_atom, msg::tier_kind kind, session_id s, msg::tier_copies& copies)
          -> caf::result<msg::tier_copies> { return tier(self, *st, kind, s, copies); },
      [st](msg::bytes_atom, const msg::bytes_ptr& j) { bytes(*st, j); },
      [st](msg::tier_done_atom, std::uint64_t t) { finish_tier(*st, t); },
      [st](msg::read_after_atom, session_id s, msg::writer_marks& marks) {
        st->rules.read_after(s, marks);
      },
      [self, st](msg::donate_atom, session_id s, forward_ops& ops) {
        stream_actions out;
        st->rules.donate(s, std::move(ops), out);
        perform(self, *st, out);
      },
      [self, st](msg::detach_atom, session_id s) {
        stream_actions out;
        st->rules.detach(s, out);
        perform(self, *st, out);
        st->pools->close_events(s);
      },
      [st](msg::events_atom, session_id s) -> std::tuple<std::string, std::string, std::string> {
        auto e = st->pools->open_events(s);
        if (!e) return {"", "", e.err().message};
        return {e->ready_ipc, e->done_ipc, ""};
      },
      [st](msg::inspect_atom) -> std::string {
        const fence_stats& total = st->ops->stats();
        const stream_counters& rc = st->rules.counters();
        const l1_pool_names names = st->pools->names();
        return "{\"device\":\"" + std::string(to_string(names.device)) +
               "\",\"device_ordinal\":" + std::to_string(names.device_ordinal) + ",\"kv_shm\":\"" +
               names.kv + "\",\"kv_bytes\":" + std::to_string(names.kv_bytes) + ",\"ssm_shm\":\"" +
               names.ssm + "\",\"ssm_bytes\":" + std::to_string(names.ssm_bytes) +
               ",\"snapshots_run\":" + std::to_string(total.snapshots) +
               ",\"clears_run\":" + std::to_string(total.clears) +
               ",\"cows_run\":" + std::to_string(total.cows) +
               ",\"bad_ops\":" + std::to_string(total.bad_ops) +
               ",\"rejected_ops\":" + std::to_string(rc.rejected_ops) +
               ",\"tier_loads\":" + std::to_string(rc.loads) +
               ",\"tier_demotions\":" + std::to_string(rc.demotions) +
               ",\"tier_backups\":" + std::to_string(rc.backups) +
               ",\"tier_bad_copies\":" + std::to_string(st->tier.bad) +
               ",\"bytes_to_host\":" + std::to_string(st->tier.bytes_to_host) +
               ",\"bytes_to_device\":" + std::to_string(st->tier.bytes_to_device) + "}";
      },
  };
}

}  // namespace hc
