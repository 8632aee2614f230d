#include "actors/node/forward_stream_actor.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <unordered_map>

#include "actors/forward_stream/fence_queue.hpp"
#include "actors/forward_stream/tier_copier.hpp"
#include "actors/node/messages.hpp"

namespace hc {
namespace {

/// Tier copies waiting for their moment, with the promise of their answer.
struct pending_tier {
  msg::tier_copies copies;
  caf::response_promise answer;
  /// Backups: the forwards of other sessions in flight when it arrived. Their data may be
  /// in the tree already (overlap scheduling caches a chunk while its forward runs), so
  /// the copy waits for each of them to end.
  std::vector<writer_mark> after;
};

struct session_stream {
  explicit session_stream(slot_pool_view v) : q(v) {}
  fence_queue q;
  std::vector<forward_ops> donations;  ///< copies from a working slot still being written
  msg::fence_ptr waiting;              ///< a begin_forward that waits for the in-flight end
  std::vector<pending_tier> backups;   ///< run once q is empty and nothing is in flight
  std::uint64_t ended = 0;             ///< the last batch that ended
  /// Forwards of other sessions that the next begin waits for (their data, cached while
  /// they ran, is what this session's requests reached: write_fences.hpp).
  std::vector<writer_mark> read_after;
  msg::fence_ptr blocked;  ///< a begin_forward waiting for read_after
};

struct tier_counters {
  std::uint64_t loads = 0, demotions = 0, backups = 0, bad = 0;
  std::uint64_t bytes_to_host = 0, bytes_to_device = 0;
};

struct state {
  std::shared_ptr<l1_pools> pools;
  std::shared_ptr<host_pools> host;
  std::unordered_map<session_id, session_stream> sessions;
  std::vector<pending_tier> loads;  ///< run before the next begin of any session
  /// Backups of closed sessions waiting for other sessions' forwards (its queue stays empty).
  session_stream orphans{slot_pool_view{}};
  metrics_sink* metrics = nullptr;
  const clock* time = nullptr;
  std::uint64_t now_ns() const { return static_cast<std::uint64_t>(time->now().count()); }
  caf::actor cache;  ///< the instance's radix_cache: told of every begin and end
  race_demo demo;    ///< rules turned off on purpose (never outside hcsim's self-test)
  std::uint64_t rejected_ops = 0;
  tier_counters tier;

  slot_pool_view view() const { return {pools->ssm.bytes(), pools->ssm_slot_bytes}; }
  device_bytes device() const {
    return {pools->kv.bytes(), pools->kv_bytes_per_token, pools->ssm.bytes(),
            pools->ssm_slot_bytes};
  }
};

/// True once the forward `w` ended, or its session closed (nothing of it writes any more).
bool has_ended(const state& st, const writer_mark& w) {
  auto it = st.sessions.find(w.session);
  return it == st.sessions.end() || it->second.ended >= w.batch;
}

/// Runs the copies and answers with them.
void run_tier(state& st, pending_tier& p) {
  if (st.host) {
    const std::uint64_t t0 = st.now_ns();
    std::uint64_t to_host = 0, to_device = 0;
    for (const tier_copy& c : p.copies) {
      const bool any = !c.device_kv.empty() || (c.device_slot != no_slot && c.host_slot != no_slot);
      const std::uint64_t moved = run_tier_copy(st.device(), *st.host, c);
      if (any && moved == 0 && (st.pools->kv_bytes_per_token || st.pools->ssm_slot_bytes))
        ++st.tier.bad;
      (c.dir == tier_copy::direction::device_to_host ? to_host : to_device) += moved;
    }
    st.tier.bytes_to_host += to_host;
    st.tier.bytes_to_device += to_device;
    const double seconds = static_cast<double>(st.now_ns() - t0) * 1e-9;
    if (to_host) st.metrics->tier_bytes("l2", "write", to_host, seconds);
    if (to_device) st.metrics->tier_bytes("l2", "read", to_device, seconds);
  }
  p.answer.deliver(std::move(p.copies));
}

void run_loads(state& st) {
  for (pending_tier& p : st.loads)
    run_tier(st, p);
  st.loads.clear();
}

/// A session's backups run once no forward of it is in flight (and the forwards of other
/// sessions they wait for ended). They need not wait for its queued ops: ops write only
/// request slots (clears, COW destinations), never a tree node's KV or slot (donations run
/// on their own, and a backed-up node's slot stays locked until backup_done).
/// `at_begin`: a begin_forward is being answered — its forward has not started yet (the
/// worker waits for the answer), so the batch marked in flight writes nothing so far.
void run_backups_if_settled(state& st, session_stream& ss, bool at_begin = false) {
  if ((ss.q.in_flight() && !at_begin) || ss.backups.empty()) return;
  auto others_ended = [&st](const pending_tier& p) {
    return std::all_of(p.after.begin(), p.after.end(),
                       [&st](const writer_mark& w) { return has_ended(st, w); });
  };
  auto ready = std::stable_partition(ss.backups.begin(), ss.backups.end(), others_ended);
  for (auto it = ss.backups.begin(); it != ready; ++it)
    run_tier(st, *it);
  ss.backups.erase(ss.backups.begin(), ready);
}

/// After any forward ended: backups of every session that waited for it.
void run_all_settled_backups(state& st) {
  for (auto& [id, ss] : st.sessions)
    run_backups_if_settled(st, ss);
}

/// Donation copies (no_buffer: working slot -> the slot donated to the tree) run as soon as
/// the session has no forward in flight — before anything queued after them, another
/// session's COW from the donated slot included.
void run_donations(state& st, session_stream& ss) {
  (void)st;
  if (ss.q.in_flight()) return;
  for (const forward_ops& d : ss.donations)
    ss.q.run_now(d);
  ss.donations.clear();
}

void answer_begin(state& st, session_stream& ss, const msg::fence_ptr& j) {
  run_backups_if_settled(st, ss, /*at_begin=*/true);  // previous forward ended, ops ran
  j->waited_ns = st.now_ns() - j->started_ns;
  st.metrics->fence_wait(static_cast<double>(j->waited_ns) * 1e-9);
  j->complete();
}

caf::response_promise tier(caf::event_based_actor* self, state& st, msg::tier_kind kind,
                           session_id s, msg::tier_copies& copies) {
  pending_tier p{std::move(copies), self->make_response_promise(), {}};
  caf::response_promise answer = p.answer;
  auto it = st.sessions.find(s);
  switch (kind) {
    case msg::tier_kind::demotion:
      ++st.tier.demotions;
      run_tier(st, p);
      break;
    case msg::tier_kind::load:
      ++st.tier.loads;
      // At once only while no forward of any session is in flight; else before the next
      // begin_forward that can run (a second line of defence: a destination id may have
      // been freed by a request a running forward still writes — quarantine holds those).
      if (!st.demo.loads_after_ops &&
          std::none_of(st.sessions.begin(), st.sessions.end(),
                       [](const auto& kv) { return kv.second.q.in_flight().has_value(); })) {
        run_tier(st, p);
      } else {
        st.loads.push_back(std::move(p));
      }
      break;
    case msg::tier_kind::backup:
      ++st.tier.backups;
      for (const auto& [id, other] : st.sessions)
        if (id != s && other.q.in_flight()) p.after.push_back({id, *other.q.in_flight()});
      if (it == st.sessions.end() && p.after.empty()) {
        run_tier(st, p);  // the session is gone and nothing else is in flight
      } else if (it == st.sessions.end()) {
        st.orphans.backups.push_back(std::move(p));
      } else {
        it->second.backups.push_back(std::move(p));
        run_backups_if_settled(st, it->second);
      }
      break;
  }
  return answer;
}

/// Tells radix_cache that `batch` of `s` began or ended — before the worker hears the
/// answer, so its next step finds the report already in radix_cache's mailbox.
void report_fence(caf::event_based_actor* self, const state& st, session_id s, std::uint64_t batch,
                  bool ended) {
  if (st.cache) self->send(st.cache, msg::fenced_atom::value, s, batch, ended);
}

/// Drops the forwards of read_after that ended (or whose session closed); true if none is
/// left to wait for.
bool reads_settled(const state& st, session_stream& ss) {
  std::erase_if(ss.read_after, [&st](const writer_mark& w) { return has_ended(st, w); });
  return ss.read_after.empty();
}

/// begin_forward once nothing it reads is being written by another session, and once this
/// session's previous forward ended (a slot or id its ops write may have been freed by a
/// request that forward still writes): that end starts it.
void start_begin(state& st, session_stream& ss, const msg::fence_ptr& j) {
  if (ss.q.in_flight()) {
    ss.waiting = j;
    return;
  }
  // Backups that were waiting for the previous forward, then the load-backs this forward
  // and the COW ops may read, then the ops.
  run_backups_if_settled(st, ss);
  if (!st.demo.loads_after_ops) run_loads(st);
  auto r = ss.q.begin(j->batch);
  if (!r) {
    j->err = r.err();
    return j->complete();
  }
  if (st.demo.loads_after_ops) run_loads(st);
  answer_begin(st, ss, j);
}

/// After a forward ended or a session closed: the begins that waited only for that.
void start_unblocked(state& st) {
  for (auto& [id, ss] : st.sessions)
    if (ss.blocked && reads_settled(st, ss))
      start_begin(st, ss, std::exchange(ss.blocked, nullptr));
}

void fence(caf::event_based_actor* self, state& st, const msg::fence_ptr& j) {
  auto it = st.sessions.find(j->session);
  if (it == st.sessions.end()) {
    j->err = {errc::not_found, "session " + std::to_string(j->session) + " is closed"};
    return j->complete();
  }
  session_stream& ss = it->second;
  if (j->begin) {
    status ok = ss.q.check_begin(j->batch);
    if (ok && (ss.blocked || ss.waiting))
      ok = {errc::invalid_argument, "a begin_forward of this session is already waiting"};
    if (!ok) {
      j->err = ok.err();
      return j->complete();
    }
    report_fence(self, st, j->session, j->batch, false);
    if (!reads_settled(st, ss)) {
      ss.blocked = j;  // started by the end of the last forward it reads from
      return;
    }
    return start_begin(st, ss, j);
  }
  auto r = ss.q.end(j->batch);
  if (r) {
    ss.ended = j->batch;
    report_fence(self, st, j->session, j->batch, true);
  } else {
    j->err = r.err();
  }
  j->complete();
  if (!r) return;
  run_donations(st, ss);  // before any begin it starts reads the donated slots
  run_all_settled_backups(st);
  run_backups_if_settled(st, st.orphans);
  if (ss.waiting) start_begin(st, ss, std::exchange(ss.waiting, nullptr));
  start_unblocked(st);
}

void bytes(state& st, const msg::bytes_ptr& j) {
  if (st.sessions.find(j->session) == st.sessions.end()) {
    j->err = {errc::not_found, "session " + std::to_string(j->session) + " is closed"};
    return j->complete();
  }
  const l1_pools& p = *st.pools;
  const bool kv = j->op == bytes_job::what::read_kv_page || j->op == bytes_job::what::write_kv_page;
  const bool write =
      j->op == bytes_job::what::write_kv_page || j->op == bytes_job::what::write_slot;
  std::span<std::byte> region = kv ? p.kv.bytes() : p.ssm.bytes();
  const std::size_t unit = kv ? p.kv_bytes_per_token * p.page_size : p.ssm_slot_bytes;
  const char* what = kv ? "KV page" : "slot";
  if (unit == 0 || region.empty()) {
    j->err = {errc::invalid_argument, std::string("this instance has no ") + what + " bytes"};
    return j->complete();
  }
  const std::size_t count = region.size() / unit;
  if (j->index <= 0 || static_cast<std::size_t>(j->index) >= count) {
    j->err = {errc::invalid_argument, std::string(what) + " " + std::to_string(j->index) +
                                          " is out of range 1.." + std::to_string(count - 1)};
    return j->complete();
  }
  auto row = region.subspan(static_cast<std::size_t>(j->index) * unit, unit);
  if (write) {
    if (j->data.size() != unit) {
      j->err = {errc::invalid_argument, std::string(what) + " payload has " +
                                            std::to_string(j->data.size()) + " bytes, expected " +
                                            std::to_string(unit)};
      return j->complete();
    }
    std::memcpy(row.data(), j->data.data(), unit);
    j->data.clear();
  } else {
    j->data.assign(row.begin(), row.end());
  }
  j->complete();
}

}  // namespace

caf::behavior forward_stream_actor(caf::event_based_actor* self, std::shared_ptr<l1_pools> pools,
                                   std::shared_ptr<host_pools> host, metrics_sink* metrics,
                                   const clock* time, race_demo demo) {
  auto st = std::make_shared<state>();
  st->time = time;
  st->demo = demo;
  st->pools = std::move(pools);
  st->host = std::move(host);
  st->metrics = metrics;
  return {
      [st](msg::attach_atom, session_id s) { st->sessions.try_emplace(s, st->view()); },
      [st](msg::ops_atom, session_id s, std::uint64_t batch, forward_ops& ops) {
        auto it = st->sessions.find(s);
        if (it == st->sessions.end() || !it->second.q.enqueue(batch, std::move(ops)))
          ++st->rejected_ops;  // a closed session, or ops for a batch that already began
      },
      [st](msg::attach_atom, caf::actor cache) { st->cache = std::move(cache); },
      [self, st](msg::fence_atom, const msg::fence_ptr& j) { fence(self, *st, j); },
      [self, st](msg::tier_atom, msg::tier_kind kind, session_id s, msg::tier_copies& copies) {
        return tier(self, *st, kind, s, copies);
      },
      [st](msg::bytes_atom, const msg::bytes_ptr& j) { bytes(*st, j); },
      [st](msg::read_after_atom, session_id s, msg::writer_marks& marks) {
        auto it = st->sessions.find(s);
        if (it == st->sessions.end()) return;
        auto& after = it->second.read_after;
        after.insert(after.end(), marks.begin(), marks.end());
      },
      [st](msg::donate_atom, session_id s, forward_ops& ops) {
        auto it = st->sessions.find(s);
        if (it == st->sessions.end()) {
          ++st->rejected_ops;
          return;
        }
        it->second.donations.push_back(std::move(ops));
        run_donations(*st, it->second);
      },
      [st](msg::detach_atom, session_id s) {
        auto it = st->sessions.find(s);
        if (it == st->sessions.end()) return;
        for (msg::fence_ptr* w : {&it->second.waiting, &it->second.blocked})
          if (*w) {
            (*w)->err = {errc::not_found, "session closed while begin_forward waited"};
            (*w)->complete();
          }
        for (const forward_ops& d : it->second.donations)  // the donated nodes need them
          it->second.q.run_now(d);
        // Nothing of it writes any more; its backups still wait for other sessions'
        // forwards that were in flight when they arrived.
        for (pending_tier& p : it->second.backups)
          st->orphans.backups.push_back(std::move(p));
        st->sessions.erase(it);
        run_backups_if_settled(*st, st->orphans);
        run_loads(*st);
        start_unblocked(*st);  // nothing of it writes any more
      },
      [st](msg::inspect_atom) -> std::string {
        fence_stats total;
        for (const auto& [id, ss] : st->sessions) {
          total.snapshots += ss.q.stats().snapshots;
          total.clears += ss.q.stats().clears;
          total.cows += ss.q.stats().cows;
          total.bad_ops += ss.q.stats().bad_ops;
        }
        return "{\"kv_shm\":\"" + st->pools->kv.name() +
               "\",\"kv_bytes\":" + std::to_string(st->pools->kv.bytes().size()) +
               ",\"ssm_shm\":\"" + st->pools->ssm.name() +
               "\",\"ssm_bytes\":" + std::to_string(st->pools->ssm.bytes().size()) +
               ",\"snapshots_run\":" + std::to_string(total.snapshots) +
               ",\"clears_run\":" + std::to_string(total.clears) +
               ",\"cows_run\":" + std::to_string(total.cows) +
               ",\"bad_ops\":" + std::to_string(total.bad_ops) +
               ",\"rejected_ops\":" + std::to_string(st->rejected_ops) +
               ",\"tier_loads\":" + std::to_string(st->tier.loads) +
               ",\"tier_demotions\":" + std::to_string(st->tier.demotions) +
               ",\"tier_backups\":" + std::to_string(st->tier.backups) +
               ",\"tier_bad_copies\":" + std::to_string(st->tier.bad) +
               ",\"bytes_to_host\":" + std::to_string(st->tier.bytes_to_host) +
               ",\"bytes_to_device\":" + std::to_string(st->tier.bytes_to_device) + "}";
      },
  };
}

}  // namespace hc
