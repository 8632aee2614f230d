#pragma once
// Notices an actor of the node that ends abnormally. An actor ends on its own only through a
// bug (an exception escaping a handler, which CAF turns into an exit with runtime_error) or
// a kill; the messages in its mailbox — jobs whose callers wait for them — are then lost, so
// the node must not go on as if nothing happened (see node_config::on_actor_failure).

#include <caf/fwd.hpp>

#include <functional>
#include <string>

namespace hc {

using actor_failure_handler = std::function<void(const std::string& what)>;

/// Calls `on_failure(name + " failed: " + reason)` on the ending actor's thread when
/// `actor` ends for any reason but a normal exit or the node's own stop (user_shutdown).
/// Does nothing when `on_failure` is empty.
void watch_actor(const caf::strong_actor_ptr& actor, std::string name,
                 actor_failure_handler on_failure);

}  // namespace hc
