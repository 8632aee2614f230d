#pragma once
// The radix_cache actor (one per cache instance): owns the tree, the L1 id allocators and
// every session's request table of this instance; executes scheduling steps and hands
// the resulting data ops to the instance's forward_stream (architecture.md §1-§2). It
// spawns that stream itself (linked: they end together) and hands it to every session it
// attaches — the only actor that needs both ends of the instance is the one that creates
// them, so neither is given the other after its spawn.
//
// Interface: msg::cache_actor (messages.hpp). After a close it tells `owner` (detached,
// instance_id): the session's state is gone from this instance. With a host tier, every
// step ends by handing its tier work to tier_pipeline.

#include <cstdint>
#include <memory>

#include "actors/common/metrics_sink.hpp"
#include "actors/node/forward_stream_actor.hpp"
#include "actors/node/tier_pipeline.hpp"
#include "actors/radix_cache/radix_cache.hpp"

namespace hc {

/// `cache`: the instance's tree and allocators, built by the caller (so that a spec too
/// large to allocate fails the open, not this actor); the actor is its only user from now
/// on. `stream`: what its forward_stream is built from. `tiers`: the instance's L2 bytes
/// and L3 access (the cache's host_kv_tokens 0: none).
msg::cache_actor::behavior_type radix_cache_actor(msg::cache_actor::pointer self,
                                                  std::shared_ptr<radix_cache> cache,
                                                  std::uint64_t instance_id, stream_setup stream,
                                                  msg::scheduler_actor_type owner,
                                                  tier_wiring tiers, metrics_sink* metrics);

}  // namespace hc
