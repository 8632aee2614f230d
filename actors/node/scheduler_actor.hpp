#pragma once
// The scheduler actor (one per node): owns the node's instances (by spec fingerprint, with
// their radix_cache and forward_stream) and its sessions (which instance each one uses).
// Messages: (open, open_ptr), (stats, stats_ptr), (drain, drain_ptr), (extstore,
// store_ptr), (detached, instance id) from a radix_cache whose session closed, (shutdown).
// Every job it takes it completes (open once the instance attached the session).

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <mutex>
#include <optional>
#include <unordered_map>

#include "actors/common/ids.hpp"
#include "actors/node/node.hpp"

namespace hc {

/// Where a session's messages go: steps and close to its instance's radix_cache (the
/// owner of the tree and of the session's request table), fences and byte access to the
/// instance's forward_stream (the owner of the L1 bytes).
struct session_route {
  caf::actor radix;
  caf::actor stream;
};

/// The sessions reachable from outside the actor system: written by the scheduler (open)
/// and by node::submit(close) and shutdown, read by the callers' threads. Thread-safe.
struct session_registry {
  std::mutex mu;
  std::unordered_map<session_id, session_route> sessions;

  std::optional<session_route> find(session_id s) {
    std::lock_guard lk(mu);
    auto it = sessions.find(s);
    if (it == sessions.end()) return std::nullopt;
    return it->second;
  }
  std::optional<session_route> take(session_id s) {
    std::lock_guard lk(mu);
    auto it = sessions.find(s);
    if (it == sessions.end()) return std::nullopt;
    session_route r = std::move(it->second);
    sessions.erase(it);
    return r;
  }
};

/// `registry` outlives the actor.
caf::behavior scheduler_actor(caf::event_based_actor* self, node_config cfg,
                              session_registry* registry);

}  // namespace hc
