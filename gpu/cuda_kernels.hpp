#pragma once
// The CUDA pools' kernels (gpu/cuda_kernels.cu): batched slot clears and slot-to-slot
// copies, launched on the pool's stream. Included only by gpu/cuda_* (it names CUDA
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

}  // namespace hc::gpu
