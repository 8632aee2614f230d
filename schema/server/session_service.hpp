#pragma once
// The Session capability: one worker session's steps, forward fences, pool info, byte
// access and close. Dropping it (the client went away) closes the session on the node.

#include <kj/memory.h>

#include "actors/common/ids.hpp"
#include "actors/common/pool_info.hpp"
#include "hybridcache.capnp.h"
#include "schema/server/server_context.hpp"

namespace hc::rpc {

/// The capability of session `id` of the node, opened with `info`.
/// `connection`: the connection it belongs to (spin_policy).
kj::Own<wire::Session::Server> make_session(server_ctx& ctx, session_id id, pool_info info,
                                            std::uint64_t connection);

}  // namespace hc::rpc
