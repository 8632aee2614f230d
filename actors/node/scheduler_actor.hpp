#pragma once
// The scheduler actor (one per node): owns the node's instances (by spec fingerprint, with
// their radix_cache and forward_stream) and its sessions (which instance each one uses).
// Interface: msg::scheduler_actor_type (messages.hpp). Every job it takes it completes
// (an open once the instance attached the session).

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <mutex>
#include <optional>
#include <unordered_map>

#include "actors/common/ids.hpp"
#include "actors/node/messages.hpp"
#include "actors/node/node.hpp"

namespace hc {

/// Where a session's messages go: steps and close to its instance's radix_cache (the
/// owner of the tree and of the session's request table), fences and byte access to the
/// instance's forward_stream (the owner of the L1 bytes).
struct session_route {
  msg::cache_actor radix;
  msg::stream_actor stream;
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

/// `registry` outlives the actor. `host`: the node's host_storage actor (spawned detached
/// by the node, which sends it the external clients' store calls itself); the scheduler
/// links to it, hands it to the instances that back up to L3 and stops it at shutdown.
msg::scheduler_actor_type::behavior_type scheduler_actor(msg::scheduler_actor_type::pointer self,
                                                         node_config cfg,
                                                         session_registry* registry,
                                                         msg::storage_actor host);

}  // namespace hc
