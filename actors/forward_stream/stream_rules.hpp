#pragma once
// The ordering rules of an instance's L1 stream (architecture.md §1 rules 2-3), as a pure
// state machine: events in (a session attaches, queues ops, begins or ends a forward, a
// tier copy arrives, ...), actions out, in the order they must take effect. The
// forward_stream actor only performs the actions: it runs the ops and copies on the bytes,
// answers the workers and reports fences to radix_cache.
//
// The rules:
// - A session's ops run at the begin_forward of the batch they were queued for, and only
//   once the session's previous forward ended (a slot freed by a request it still writes
//   may be recycled by those ops). A second begin waits for that end ("waiting").
// - A begin also waits for the forwards of other sessions its requests read from
//   (read_after: their bytes, cached while they ran) to end ("blocked").
// - Donation copies (no_buffer: working slot -> the slot donated to the tree) run as soon
//   as their session has no forward in flight — before anything queued after them.
// - Load-backs (H→D) run at once while no forward of any session is in flight, else just
//   before the ops of the next begin that can run.
// - Demotions (D→H of an eviction) run at once.
// - Backups (D→H of write-through) run once their session has no forward in flight and
//   every forward of another session in flight when they arrived has ended. A closed
//   session's backups become orphans that still wait for those forwards.
// - A closed session's waiting begins are refused; its pending donations run (the donated
//   nodes need them); nothing of it writes any more.
//
// Every begin and end the rules accept is reported (report) before it is answered.
// Thread safety: none; confined to the forward_stream actor.

#include <cstdint>
#include <map>
#include <optional>
#include <variant>
#include <vector>

#include "actors/common/ids.hpp"
#include "actors/common/status.hpp"
#include "actors/forward_stream/fence_queue.hpp"
#include "actors/forward_stream/race_demo.hpp"
#include "actors/radix_cache/write_fences.hpp"
#include "actors/scheduler/forward_ops.hpp"

namespace hc {

/// What a batch of tier copies is, which decides when it runs (see the rules above).
enum class tier_kind : std::uint8_t { load, demotion, backup };

/// The caller's name for a begin, an end or a tier job, echoed in the action that
/// answers or runs it.
using stream_ticket = std::uint64_t;

namespace stream_action {
struct run_ops {  ///< run these clears / COWs / snapshots on the L1 slots now
  session_id session = 0;
  forward_ops ops;
};
struct run_tier {  ///< run tier job `ticket`'s copies now and answer it
  stream_ticket ticket = 0;
};
struct answer {  ///< answer the begin or end `ticket` with `result`
  stream_ticket ticket = 0;
  status result;
};
struct report {  ///< tell radix_cache that `batch` of `session` began (or waits) / ended
  session_id session = 0;
  std::uint64_t batch = 0;
  bool ended = false;
};
}  // namespace stream_action

using stream_action_v = std::variant<stream_action::run_ops, stream_action::run_tier,
                                     stream_action::answer, stream_action::report>;
using stream_actions = std::vector<stream_action_v>;

struct stream_counters {
  std::uint64_t rejected_ops = 0;  ///< ops or donations for a closed session / begun batch
  std::uint64_t loads = 0, demotions = 0, backups = 0;
};

class stream_rules {
 public:
  explicit stream_rules(race_demo demo = {}) : demo_(demo) {}

  void attach(session_id s);
  /// Closes `s`: refuses its waiting begin, runs its donations, orphans its backups and
  /// runs whatever no longer waits for it.
  void detach(session_id s, stream_actions& out);

  /// Queues ops for `batch` of `s`; false (counted) for a closed session or a begun batch.
  bool enqueue(session_id s, std::uint64_t batch, forward_ops ops);
  /// Donation copies of `s` (run at once if it has no forward in flight).
  void donate(session_id s, forward_ops ops, stream_actions& out);
  /// `s`'s next begin waits until these forwards of other sessions ended.
  void read_after(session_id s, const std::vector<writer_mark>& marks);

  void begin(session_id s, std::uint64_t batch, stream_ticket t, stream_actions& out);
  void end(session_id s, std::uint64_t batch, stream_ticket t, stream_actions& out);
  void tier(tier_kind kind, session_id s, stream_ticket t, stream_actions& out);

  const stream_counters& counters() const noexcept { return counters_; }
  bool has_session(session_id s) const { return sessions_.count(s) != 0; }

 private:
  struct begin_request {
    stream_ticket ticket;
    std::uint64_t batch;
  };
  struct backup {
    stream_ticket ticket;
    std::vector<writer_mark> after;  ///< other sessions' forwards in flight on arrival
  };
  struct session {
    fence_queue q;
    std::vector<forward_ops> donations;    ///< copies from a working slot still being written
    std::optional<begin_request> waiting;  ///< waits for this session's in-flight end
    std::optional<begin_request> blocked;  ///< waits for read_after
    std::vector<backup> backups;
    std::vector<writer_mark> read_after;
  };

  bool has_ended(const writer_mark& w) const;
  bool any_in_flight() const;
  bool reads_settled(session& ss);
  void run_ready(std::vector<backup>& backups, stream_actions& out) const;
  void run_backups_if_settled(session& ss, stream_actions& out, bool at_begin = false) const;
  void run_donations(session_id s, session& ss, stream_actions& out);
  void run_loads(stream_actions& out);
  void start_begin(session_id s, session& ss, begin_request b, stream_actions& out);
  void start_unblocked(stream_actions& out);

  race_demo demo_;
  std::map<session_id, session> sessions_;  ///< ordered: the actions' order is reproducible
  std::vector<stream_ticket> loads_;        ///< run before the next begin of any session
  std::vector<backup> orphans_;             ///< backups of closed sessions
  stream_counters counters_;
};

}  // namespace hc
