#pragma once
// The host_storage actor (one per node, on its own thread: it blocks on L3 I/O): the L3
// side of backups and prefetches (architecture.md §1-§2). It moves bytes between the L2
// host pools of an instance and the node's L3 store; it decides nothing about ownership —
// the radix_cache that sent a job reserved and protected every id in it until the reply.
//
// Interface: msg::storage_actor (messages.hpp).

#include <memory>

#include "actors/common/clock.hpp"
#include "actors/common/metrics_sink.hpp"
#include "actors/node/messages.hpp"
#include "storage/l3_store.hpp"

namespace hc {

/// `store` may be null (no L3): jobs then fail with io_error. `time` (outlives the actor)
/// times the I/O and checks read deadlines. Spawn it detached.
msg::storage_actor::behavior_type host_storage_actor(msg::storage_actor::pointer self,
                                                     std::shared_ptr<l3_store> store,
                                                     metrics_sink* metrics, const clock* time);

}  // namespace hc
