#pragma once
// The Store capability: an external client's batches against the node's L3 store, under
// its identity, through its own shared-memory arena.

#include <kj/memory.h>

#include <memory>
#include <string>

#include "actors/common/status.hpp"
#include "gpu/shm_region.hpp"
#include "hybridcache.capnp.h"
#include "schema/server/server_context.hpp"

namespace hc::rpc {

/// A Store identity: 1..256 printable characters.
status check_identity(const std::string& id);

/// `connection`: the connection it belongs to (spin_policy).
kj::Own<wire::Store::Server> make_store(server_ctx& ctx, std::string identity,
                                        std::shared_ptr<shm_region> arena,
                                        std::uint64_t connection);

}  // namespace hc::rpc
