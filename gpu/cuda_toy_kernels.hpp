#pragma once
// The toy forward's kernels (gpu/cuda_toy_kernels.cu), launched by gpu/cuda_toy_forward.cpp
// on batches already copied to the device. C++17 and no CUDA header (nvcc and g++ both
// read it).

#include <cstdint>

#include "gpu/toy_forward_ops.hpp"

namespace hc::gpu {

/// A forward batch's parts in device memory (gpu/toy_forward.hpp).
struct toy_batch_view {
  const std::int32_t* tokens = nullptr;
  const std::uint64_t* positions = nullptr;
  const std::int32_t* kv_rows = nullptr;
  const toy::scan_item* items = nullptr;
  const toy::capture* captures = nullptr;
  const toy::conv_fix* fixes = nullptr;
  const std::int32_t* conv_values = nullptr;
  std::uint32_t n_tokens = 0, n_items = 0, n_captures = 0, n_fixes = 0;
};

/// Enqueues the KV, scan and fix kernels on `stream` (a cudaStream_t; the fix kernel runs
/// after the scan). Returns the launch's cudaError_t as an int (0: success).
int launch_toy_forward(void* stream, const toy::shape& s, unsigned char* kv, unsigned char* ssm,
                       const toy_batch_view& b);

}  // namespace hc::gpu
