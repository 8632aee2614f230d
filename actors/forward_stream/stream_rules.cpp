#include "actors/forward_stream/stream_rules.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace hc {
namespace {

error closed(session_id s) {
  return {errc::not_found, "session " + std::to_string(s) + " is closed"};
}

}  // namespace

void stream_rules::attach(session_id s) {
  sessions_.try_emplace(s);
}

bool stream_rules::has_ended(const writer_mark& w) const {
  auto it = sessions_.find(w.session);
  return it == sessions_.end() || !it->second.q.progress().writing(w.batch);
}

bool stream_rules::any_in_flight() const {
  return std::any_of(sessions_.begin(), sessions_.end(),
                     [](const auto& kv) { return kv.second.q.in_flight().has_value(); });
}

bool stream_rules::reads_settled(session& ss) {
  std::erase_if(ss.read_after, [this](const writer_mark& w) { return has_ended(w); });
  return ss.read_after.empty();
}

void stream_rules::run_ready(std::vector<backup>& backups, stream_actions& out) const {
  auto others_ended = [this](const backup& b) {
    return std::all_of(b.after.begin(), b.after.end(),
                       [this](const writer_mark& w) { return has_ended(w); });
  };
  auto ready = std::stable_partition(backups.begin(), backups.end(), others_ended);
  for (auto it = backups.begin(); it != ready; ++it)
    out.push_back(stream_action::run_tier{it->ticket});
  backups.erase(backups.begin(), ready);
}

// They need not wait for the session's queued ops: ops write only request slots (clears,
// COW destinations), never a tree node's KV or slot (donations run on their own, and a
// backed-up node's slot stays locked until backup_done). `at_begin`: a begin is being
// answered — its forward has not started (the worker waits for the answer), so the batch
// marked in flight writes nothing yet.
void stream_rules::run_backups_if_settled(session& ss, stream_actions& out, bool at_begin) const {
  if (ss.q.in_flight() && !at_begin) return;
  run_ready(ss.backups, out);
}

void stream_rules::run_donations(session_id s, session& ss, stream_actions& out) {
  if (ss.q.in_flight()) return;
  for (forward_ops& d : ss.donations)
    out.push_back(stream_action::run_ops{s, std::move(d)});
  ss.donations.clear();
}

void stream_rules::run_loads(stream_actions& out) {
  for (stream_ticket t : loads_)
    out.push_back(stream_action::run_tier{t});
  loads_.clear();
}

void stream_rules::detach(session_id s, stream_actions& out) {
  auto it = sessions_.find(s);
  if (it == sessions_.end()) return;
  session& ss = it->second;
  for (std::optional<begin_request>* w : {&ss.waiting, &ss.blocked})
    if (*w)
      out.push_back(stream_action::answer{
          (*w)->ticket, error{errc::not_found, "session closed while begin_forward waited"}});
  for (forward_ops& d : ss.donations)  // the donated nodes need them
    out.push_back(stream_action::run_ops{s, std::move(d)});
  for (backup& b : ss.backups)
    orphans_.push_back(std::move(b));
  sessions_.erase(it);
  run_ready(orphans_, out);
  run_loads(out);
  start_unblocked(out);
}

bool stream_rules::enqueue(session_id s, std::uint64_t batch, forward_ops ops) {
  auto it = sessions_.find(s);
  if (it == sessions_.end() || !it->second.q.enqueue(batch, std::move(ops))) {
    ++counters_.rejected_ops;
    return false;
  }
  return true;
}

void stream_rules::donate(session_id s, forward_ops ops, stream_actions& out) {
  auto it = sessions_.find(s);
  if (it == sessions_.end()) {
    ++counters_.rejected_ops;
    return;
  }
  it->second.donations.push_back(std::move(ops));
  run_donations(s, it->second, out);
}

void stream_rules::read_after(session_id s, const std::vector<writer_mark>& marks) {
  auto it = sessions_.find(s);
  if (it == sessions_.end()) return;
  auto& after = it->second.read_after;
  after.insert(after.end(), marks.begin(), marks.end());
}

void stream_rules::begin(session_id s, std::uint64_t batch, stream_ticket t, stream_actions& out) {
  auto it = sessions_.find(s);
  if (it == sessions_.end()) {
    out.push_back(stream_action::answer{t, closed(s)});
    return;
  }
  session& ss = it->second;
  status ok = ss.q.check_begin(batch);
  if (ok && (ss.blocked || ss.waiting))
    ok = {errc::invalid_argument, "a begin_forward of this session is already waiting"};
  if (!ok) {
    out.push_back(stream_action::answer{t, ok});
    return;
  }
  out.push_back(stream_action::report{s, batch, false});
  if (!reads_settled(ss)) {
    ss.blocked = begin_request{t, batch};  // started by the end of the last forward it reads
    return;
  }
  start_begin(s, ss, {t, batch}, out);
}

// A begin runs once this session's previous forward ended (a slot or id its ops write may
// have been freed by a request that forward still writes): that end starts it. Then the
// backups that waited for that forward, the load-backs this forward and its COWs may
// read, the ops, and the answer.
void stream_rules::start_begin(session_id s, session& ss, begin_request b, stream_actions& out) {
  if (ss.q.in_flight()) {
    ss.waiting = b;
    return;
  }
  run_backups_if_settled(ss, out);
  if (!demo_.loads_after_ops) run_loads(out);
  auto due = ss.q.begin(b.batch);
  if (!due) {
    out.push_back(stream_action::answer{b.ticket, due.err()});
    return;
  }
  for (forward_ops& ops : *due)
    out.push_back(stream_action::run_ops{s, std::move(ops)});
  if (demo_.loads_after_ops) run_loads(out);
  run_backups_if_settled(ss, out, /*at_begin=*/true);
  out.push_back(stream_action::answer{b.ticket, {}});
}

void stream_rules::start_unblocked(stream_actions& out) {
  for (auto& [id, ss] : sessions_)
    if (ss.blocked && reads_settled(ss)) start_begin(id, ss, *std::exchange(ss.blocked, {}), out);
}

void stream_rules::end(session_id s, std::uint64_t batch, stream_ticket t, stream_actions& out) {
  auto it = sessions_.find(s);
  if (it == sessions_.end()) {
    out.push_back(stream_action::answer{t, closed(s)});
    return;
  }
  session& ss = it->second;
  status r = ss.q.end(batch);
  if (r) {
    out.push_back(stream_action::report{s, batch, true});
  }
  out.push_back(stream_action::answer{t, r});
  if (!r) return;
  run_donations(s, ss, out);  // before any begin it starts reads the donated slots
  for (auto& [id, other] : sessions_)
    run_backups_if_settled(other, out);
  run_ready(orphans_, out);
  if (ss.waiting) start_begin(s, ss, *std::exchange(ss.waiting, {}), out);
  start_unblocked(out);
}

void stream_rules::tier(tier_kind kind, session_id s, stream_ticket t, stream_actions& out) {
  switch (kind) {
    case tier_kind::demotion:
      ++counters_.demotions;
      out.push_back(stream_action::run_tier{t});
      return;
    case tier_kind::load:
      ++counters_.loads;
      // At once only while no forward of any session is in flight; else before the next
      // begin that can run (a second line of defence: a destination id may have been freed
      // by a request a running forward still writes — quarantine holds those).
      if (!demo_.loads_after_ops && !any_in_flight()) {
        out.push_back(stream_action::run_tier{t});
      } else {
        loads_.push_back(t);
      }
      return;
    case tier_kind::backup: {
      ++counters_.backups;
      backup b{t, {}};
      for (const auto& [id, other] : sessions_)
        if (id != s && other.q.in_flight()) b.after.push_back({id, *other.q.in_flight()});
      auto it = sessions_.find(s);
      if (it == sessions_.end() && b.after.empty()) {
        out.push_back(stream_action::run_tier{t});  // the session is gone, nothing in flight
      } else if (it == sessions_.end()) {
        orphans_.push_back(std::move(b));
      } else {
        it->second.backups.push_back(std::move(b));
        run_backups_if_settled(it->second, out);
      }
      return;
    }
  }
}

}  // namespace hc
