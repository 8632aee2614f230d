#include "actors/forward_stream/forward_stream_actor.hpp"

#include <chrono>
#include <cstring>
#include <string>
#include <unordered_map>

#include "actors/forward_stream/fence_queue.hpp"
#include "actors/node/messages.hpp"

namespace hc {
namespace {

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

struct session_stream {
  explicit session_stream(slot_pool_view v) : q(v) {}
  fence_queue q;
  msg::fence_ptr waiting;  ///< a begin_forward that waits for the in-flight end
};

struct state {
  std::shared_ptr<l1_pools> pools;
  std::unordered_map<session_id, session_stream> sessions;
  metrics_sink* metrics = nullptr;
  std::uint64_t rejected_ops = 0;

  slot_pool_view view() const { return {pools->ssm.bytes(), pools->ssm_slot_bytes}; }
};

void answer_begin(state& st, const msg::fence_ptr& j) {
  j->waited_ns = now_ns() - j->started_ns;
  st.metrics->fence_wait(static_cast<double>(j->waited_ns) * 1e-9);
  j->complete();
}

void fence(state& st, const msg::fence_ptr& j) {
  auto it = st.sessions.find(j->session);
  if (it == st.sessions.end()) {
    j->err = {errc::not_found, "session " + std::to_string(j->session) + " is closed"};
    return j->complete();
  }
  session_stream& ss = it->second;
  if (j->begin) {
    auto r = ss.q.begin(j->batch);
    if (!r) {
      j->err = r.err();
      return j->complete();
    }
    if (*r == fence_queue::begin_state::waiting) {
      ss.waiting = j;
      return;
    }
    return answer_begin(st, j);
  }
  auto r = ss.q.end(j->batch);
  if (!r) j->err = r.err();
  j->complete();
  if (r && *r && ss.waiting) answer_begin(st, std::exchange(ss.waiting, nullptr));
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

caf::behavior forward_stream_actor(caf::event_based_actor*, std::shared_ptr<l1_pools> pools,
                                   metrics_sink* metrics) {
  auto st = std::make_shared<state>();
  st->pools = std::move(pools);
  st->metrics = metrics;
  return {
      [st](msg::attach_atom, session_id s) { st->sessions.try_emplace(s, st->view()); },
      [st](msg::ops_atom, session_id s, std::uint64_t batch, forward_ops& ops) {
        auto it = st->sessions.find(s);
        if (it == st->sessions.end() || !it->second.q.enqueue(batch, std::move(ops)))
          ++st->rejected_ops;  // a closed session, or ops for a batch that already began
      },
      [st](msg::fence_atom, const msg::fence_ptr& j) { fence(*st, j); },
      [st](msg::bytes_atom, const msg::bytes_ptr& j) { bytes(*st, j); },
      [st](msg::detach_atom, session_id s) {
        auto it = st->sessions.find(s);
        if (it == st->sessions.end()) return;
        if (it->second.waiting) {
          it->second.waiting->err = {errc::not_found, "session closed while begin_forward waited"};
          it->second.waiting->complete();
        }
        st->sessions.erase(it);
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
               ",\"rejected_ops\":" + std::to_string(st->rejected_ops) + "}";
      },
  };
}

}  // namespace hc
