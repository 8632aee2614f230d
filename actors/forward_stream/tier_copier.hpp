#pragma once
// The byte side of tier copies (cache-semantics.md §5.2-§5.3): KV tokens and SSM states
// between an instance's L1 pools and its L2 host pools, in the ids the radix_cache chose.
// Runs of consecutive ids on both sides move with one memcpy.
//
// Thread safety: none; forward_stream calls it on its own stream of operations.

#include <cstddef>
#include <cstdint>
#include <span>

#include "actors/common/l1_pool.hpp"
#include "actors/host_storage/host_pools.hpp"
#include "actors/radix_cache/radix_tree.hpp"

namespace hc {

/// Performs `c` in its direction. Returns the bytes moved; 0 (and nothing moved) when an
/// id is out of range of either side, which the caller reports as a bad op.
/// On a pool without KV (slot) bytes the KV (state) part is only counted, not moved.
/// `queue_only`: a device pool only queues the copies (l1_pool::queue_*); the host bytes
/// are not to be used (nor changed) until the pool's when_done() / synchronize().
std::uint64_t run_tier_copy(l1_pool& dev, host_pools& host, const tier_copy& c,
                            bool queue_only = false);

}  // namespace hc
