#pragma once
// Where a session finds its instance's L1 pools (CacheNode.open's answer).
// Vocabulary header: standard library only.

#include <cstdint>
#include <string>

#include "actors/common/device_kind.hpp"

namespace hc {

/// Where an instance's L1 pools are and their sizes. A worker maps them read-write: in
/// CPU mode the POSIX shared-memory names, in CUDA mode the CUDA IPC memory handles
/// (cudaIpcOpenMemHandle on device_ordinal). Their layout is token-major KV
/// (kv_bytes_per_token per token, page 0 reserved) and slot-major SSM states
/// (ssm_slot_bytes per slot, slot 0 reserved).
struct pool_info {
  std::string kv_shm;  ///< CPU mode; "" when the instance has no KV bytes
  std::uint64_t kv_bytes = 0;
  std::string ssm_shm;  ///< CPU mode; "" when the instance has no slot bytes
  std::uint64_t ssm_bytes = 0;
  std::uint64_t kv_bytes_per_token = 0;
  std::uint64_t ssm_slot_bytes = 0;
  std::uint64_t instance_id = 0;
  device_kind device = device_kind::cpu;
  std::uint32_t device_ordinal = 0;
  std::string kv_ipc_handle;   ///< CUDA mode: cudaIpcMemHandle_t bytes (64); "" if no KV bytes
  std::string ssm_ipc_handle;  ///< CUDA mode: of the SSM pool; "" if no slot bytes
  /// CUDA mode: the session's fence events (cudaIpcEventHandle_t bytes, 64 each). The
  /// worker's forward waits on `ready` (cudaStreamWaitEvent) once beginForward returned;
  /// after the forward the worker records `done` on its stream, then calls endForward.
  std::string ready_event_ipc_handle, done_event_ipc_handle;
  /// InstanceSpec.shared_rows: the session's request rows ((rows + 1) x row_width int32
  /// KV ids, row r at r * row_width); "" / 0 otherwise.
  std::string rows_shm;
  std::uint64_t rows_bytes = 0;
  std::uint64_t row_width = 0;
  /// InstanceSpec.shared_tokens: the session's token arena (shared_tokens int32 tokens);
  /// "" / 0 otherwise.
  std::string tokens_shm;
  std::uint64_t tokens_bytes = 0;
  friend bool operator==(const pool_info&, const pool_info&) = default;
};

}  // namespace hc
