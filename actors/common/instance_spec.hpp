#pragma once
// What a worker opens a session with (architecture.md §3). Plain data: the node validates
// it and derives the instance's configs from it (actors/scheduler/instance_config.hpp).
// Vocabulary header: standard library only.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "actors/common/device_kind.hpp"
#include "actors/common/strategy.hpp"
#include "actors/common/tier_policy.hpp"

namespace hc {

/// Most bytes of a spec's model id and of its namespace, as of a Store identity: each
/// names the instance in its L3 keys, KV event topics and `hcctl inspect`.
inline constexpr std::size_t max_spec_name_bytes = 256;

struct instance_spec {
  /// Model identity (fingerprint part): printable text of at most max_spec_name_bytes.
  std::string model_id;
  std::uint32_t tp_rank = 0;           ///< tensor-parallel rank. Default: 0
  std::uint32_t tp_size = 1;           ///< Default: 1
  std::size_t page_size = 1;           ///< P. Default: 1
  std::size_t kv_tokens = 0;           ///< usable L1 KV tokens; > 0, multiple of P, <= 2^31-1-P
  std::size_t kv_bytes_per_token = 0;  ///< 0: bookkeeping only (no KV bytes)
  std::size_t ssm_slots = 0;           ///< usable L1 SSM slots; 1..2^31-2
  std::size_t ssm_slot_bytes = 0;      ///< 0: bookkeeping only (no slot bytes)
  std::size_t chunk_size = 64;         ///< C = max(model chunk, P). Default: 64
  strategy strat = strategy::no_buffer;
  std::size_t track_interval = 256;  ///< Default: 256
  bool overlap = true;               ///< ping-pong size 2. Default: true
  std::size_t request_rows = 64;     ///< rows of this session. Default: 64
  std::size_t max_context_len = 0;   ///< row width; 0 = unlimited
  /// The session's request rows in POSIX shared memory (pool_info::rows_shm: (rows + 1) x
  /// max_context_len int32 KV ids, row r at r * max_context_len, SGLang's req_to_token);
  /// match / alloc_kv / cache_unfinished results then carry no index lists: the worker
  /// reads its rows. Needs max_context_len > 0. Per session, not part of the instance.
  /// Default: false
  bool shared_rows = false;
  /// Capacity in tokens of the session's token arena in POSIX shared memory
  /// (pool_info::tokens_shm: int32 tokens): create / append may then pass their tokens as a
  /// range of it (cmd::token_range) instead of in the command. 0 = none. Per session, not
  /// part of the instance. Default: 0
  std::size_t shared_tokens = 0;
  std::size_t slots_per_request = 0;  ///< pre-eviction factor (<= ssm_slots); 0: strategy
  /// Namespace (LoRA / cache salt); "" = default. Printable text of at most
  /// max_spec_name_bytes.
  std::string ns;
  device_kind device = device_kind::cpu;  ///< where the L1 pools live. Default: cpu
  std::uint32_t device_ordinal = 0;       ///< CUDA device of the pools (device cuda)

  // --- host tier (HiCache, cache-semantics.md §5); on when hicache_ratio or hicache_bytes > 0
  double hicache_ratio = 0;         ///< host pools as a multiple of the device pools (> 1)
  std::uint64_t hicache_bytes = 0;  ///< host bytes for both pools; overrides the ratio
  /// Host bytes of the SSM pool alone (SGLang's proposed --hicache-mamba-size-gb): the
  /// host SSM pool gets this many bytes of slots (+1), and the host KV pool the rest of
  /// hicache_bytes, or hicache_ratio x the device KV pool. Needs hicache_ratio or
  /// hicache_bytes; less than hicache_bytes. 0 = both pools by the ratio or split in the
  /// device pools' proportion (§5.1). Default: 0
  std::uint64_t hicache_ssm_bytes = 0;
  write_policy hicache_write_policy = write_policy::write_through;
  prefetch_termination prefetch_policy = prefetch_termination::best_effort;
  std::size_t prefetch_threshold = 256;  ///< tokens; fewer are not prefetched. Default: 256
  bool hicache_storage = true;           ///< back up to / prefetch from the node's L3 store
  bool host_tier() const noexcept { return hicache_ratio > 0 || hicache_bytes > 0; }
  friend bool operator==(const instance_spec&, const instance_spec&) = default;
};

}  // namespace hc
