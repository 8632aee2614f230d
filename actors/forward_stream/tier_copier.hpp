#pragma once
// The byte side of tier copies (cache-semantics.md §5.2-§5.3): KV tokens and SSM states
// between an instance's L1 pools and its L2 host pools, in the ids the radix_cache chose.
// Runs of consecutive ids on both sides move with one memcpy.
//
// Thread safety: none; forward_stream calls it on its own stream of operations.

#include <cstddef>
#include <cstdint>
#include <span>

#include "actors/host_storage/host_pools.hpp"
#include "actors/radix_cache/radix_tree.hpp"

namespace hc {

/// L1 bytes as the copier sees them. token_bytes / slot_bytes 0: no bytes (bookkeeping-only
/// instance); the copy is then only counted.
struct device_bytes {
  std::span<std::byte> kv;  ///< token t at [t * token_bytes, (t+1) * token_bytes)
  std::size_t token_bytes = 0;
  std::span<std::byte> ssm;  ///< slot s at [s * slot_bytes, (s+1) * slot_bytes)
  std::size_t slot_bytes = 0;
};

/// Performs `c` in its direction. Returns the bytes moved; 0 (and nothing moved) when an
/// id is out of range of either side, which the caller reports as a bad op.
std::uint64_t run_tier_copy(const device_bytes& dev, host_pools& host, const tier_copy& c);

}  // namespace hc
