#pragma once
// The CUDA pools' kernels (gpu/cuda_kernels.cu): batched slot clears and slot-to-slot
// copies, and scattered byte runs between device memory and mapped page-locked host
// memory (tier copies), launched on the pool's stream. Included only by gpu/cuda_* (it names CUDA
// types); C++17 (nvcc compiles the .cu side with -std=c++17).
//
// The caller checks every id; a launch only reports CUDA's launch error (the kernels run
// later, in stream order).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace hc::gpu {

/// Most entries one launch carries. They travel in the kernel's parameters, so a launch
/// needs no device staging buffer and no host buffer that must outlive it.
inline constexpr std::size_t max_slots_per_launch = 256;

/// Zeroes slots[0..n) (slot_bytes each, from `base`), n <= max_slots_per_launch.
cudaError_t launch_clear_slots(void* base, std::size_t slot_bytes, const std::int32_t* slots,
                               std::size_t n, cudaStream_t stream);

/// Copies slot src[i] onto slot dst[i] for every i < n <= max_slots_per_launch, all at
/// once: the caller passes copies that do not depend on each other (independent_runs).
cudaError_t launch_copy_slots(void* base, std::size_t slot_bytes, const std::int32_t* src,
                              const std::int32_t* dst, std::size_t n, cudaStream_t stream);

/// Most runs one launch_copy_runs carries (in the kernel's parameters: 24 bytes a run).
inline constexpr std::size_t max_runs_per_launch = 128;

/// Copies bytes[i] bytes from src[i] to dst[i] for every i < n <= max_runs_per_launch, all
/// at once (the runs must not overlap). Pointers are device addresses: device memory, or
/// page-locked host memory mapped into the device's address space — so one launch moves
/// many scattered pages across PCIe without a DMA submission per page.
cudaError_t launch_copy_runs(void* const* dst, const void* const* src, const std::size_t* bytes,
                             std::size_t n, cudaStream_t stream);

}  // namespace hc::gpu
