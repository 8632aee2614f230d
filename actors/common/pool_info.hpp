#pragma once
// Where a session finds its instance's L1 pools (CacheNode.open's answer).
// Vocabulary header: standard library only.

#include <cstdint>
#include <string>

namespace hc {

/// The POSIX shared-memory names and sizes of an instance's L1 pools. A worker maps them
/// read-write; their layout is token-major KV (kv_bytes_per_token per token, page 0
/// reserved) and slot-major SSM states (ssm_slot_bytes per slot, slot 0 reserved).
struct pool_info {
  std::string kv_shm;  ///< "" when the instance has no KV bytes
  std::uint64_t kv_bytes = 0;
  std::string ssm_shm;  ///< "" when the instance has no slot bytes
  std::uint64_t ssm_bytes = 0;
  std::uint64_t kv_bytes_per_token = 0;
  std::uint64_t ssm_slot_bytes = 0;
  std::uint64_t instance_id = 0;
  friend bool operator==(const pool_info&, const pool_info&) = default;
};

}  // namespace hc
