#pragma once
// CUDA mode's L1 pools: KV tokens and SSM slots in cudaMalloc'd device memory, exported
// with CUDA IPC memory handles (l1_pool_names::kv_ipc / ssm_ipc) so that a worker maps
// them without a copy. Clears and copies run on the pool's own CUDA stream (batches as
// one kernel launch per independent run, actors/common/l1_pool.hpp); read_* / write_*
// are D→H / H→D copies on that stream, so they see every change queued before them, and
// wait for it (the byte-access path of the RPC, not the scheduling path).
// Pools start zeroed, as shared memory does.
//
// No CUDA header here (style habit 11): the implementation is gpu/cuda_l1_pool.cpp (with
// the kernels in gpu/cuda_kernels.cu); a build without CUDA has gpu/no_cuda_l1_pool.cpp,
// whose factory refuses. Every CUDA error becomes a project error at this boundary:
// out_of_memory for an allocation, invalid_config for a missing driver or device,
// io_error otherwise (the message names the call and CUDA's error).
// Thread safety: none; one owner (the instance's forward_stream). Any thread may call:
// each call makes the pool's device current first.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "actors/common/l1_pool.hpp"
#include "actors/common/status.hpp"

namespace hc {

/// How a batch of KV runs (queue_read_kv_runs / queue_write_kv_runs: a tier copy's pages)
/// crosses PCIe. `kernel`: one launch whose threads copy every run to or from the host
/// memory mapped into the device (only for host memory pinned through pin_host; other
/// memory goes by copy engine); `copy_engine`: one cudaMemcpyBatchAsync, a DMA transfer per
/// run; `automatic`: the kernel while the runs average under kernel_below_bytes, where
/// a DMA transfer per run costs more than the transfer itself (BENCHMARKS.md §9).
enum class tier_copy_path : std::uint8_t { automatic, kernel, copy_engine };

struct cuda_pool_shape {
  std::uint32_t device = 0;     ///< CUDA device ordinal
  std::size_t kv_tokens = 0;    ///< token rows (reserved page included)
  std::size_t token_bytes = 0;  ///< 0: no KV bytes
  std::size_t slots = 0;        ///< slot rows (reserved slot 0 included)
  std::size_t slot_bytes = 0;   ///< 0: no slot bytes
  tier_copy_path tier_copies = tier_copy_path::automatic;
  std::size_t kernel_below_bytes = std::size_t{256} << 10;
};

/// The pools, or why not (see above). Without CUDA in the build: invalid_config.
result<std::unique_ptr<l1_pool>> make_cuda_l1_pool(const cuda_pool_shape& shape);

}  // namespace hc
