#pragma once
// The forward_stream actor (one per cache instance): owns the L1 bytes (KV and SSM pools,
// shared memory in CPU mode) and the one ordered stream on which they change — queued
// clear / COW / snapshot ops, donations, tier copies and the workers' forward fences
// (architecture.md §1 rules 2-3). When each of them happens is decided by stream_rules
// (actors/forward_stream/stream_rules.hpp, pure, table-tested); this actor performs the
// rules' actions in order: runs ops and copies on the bytes, answers fences and tier jobs,
// and reports every accepted begin and end to radix_cache before answering the worker.
// Decides nothing about ownership.
//
// Interface: msg::stream_actor (messages.hpp). It reports (fenced, session, batch, ended)
// to the radix_cache that spawned it.

#include <memory>

#include "actors/common/clock.hpp"
#include "actors/common/l1_pool.hpp"
#include "actors/common/metrics_sink.hpp"
#include "actors/forward_stream/race_demo.hpp"
#include "actors/host_storage/host_pools.hpp"
#include "actors/node/messages.hpp"

namespace hc {

/// What an instance's stream is built from (by its radix_cache, which spawns it).
struct stream_setup {
  std::shared_ptr<l1_pool> pools;    ///< the L1 bytes (the device seam)
  std::size_t page_size = 1;         ///< tokens per KV page (workers' page access)
  std::shared_ptr<host_pools> host;  ///< the instance's L2 pools (null without a host tier)
  metrics_sink* metrics = nullptr;
  const clock* time = nullptr;  ///< times fence waits and copies; outlives the actor
  race_demo demo;
};

/// `cache`: the instance's radix_cache, told of every begin and end.
msg::stream_actor::behavior_type forward_stream_actor(msg::stream_actor::pointer self,
                                                      stream_setup setup, msg::cache_actor cache);

}  // namespace hc
