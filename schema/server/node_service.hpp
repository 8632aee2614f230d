#pragma once
// The CacheNode capability (the bootstrap): ping, open, stats, inspect, drain, store and
// login. A locked one (TCP) answers every call but login with an UNAUTHENTICATED error
// until login with the node's token returns an unlocked one.

#include <kj/memory.h>

#include <functional>

#include "hybridcache.capnp.h"
#include "schema/server/server_context.hpp"

namespace hc::rpc {

/// One per connection (its sessions and stores are that connection's calls for
/// spin_policy). `on_login` (locked only) hears each successful login on it.
kj::Own<wire::CacheNode::Server> make_node_service(server_ctx& ctx, bool locked,
                                                   std::function<void()> on_login = {});

}  // namespace hc::rpc
