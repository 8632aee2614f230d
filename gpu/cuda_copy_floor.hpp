#pragma once
// The device's own copy speeds, for hcbench to put the pools' figures beside in the same
// run (BENCHMARKS.md): plain cudaMemcpyAsync device→device (HBM), cudaMemsetAsync, and
// host↔device through pinned host memory (PCIe), each on buffers it owns, each call
// waiting for its copy (as the pool benchmarks do). No CUDA header here: the
// implementation is gpu/cuda_copy_floor.cpp; without CUDA (gpu/no_cuda_copy_floor.cpp)
// create() refuses with invalid_config.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "actors/common/status.hpp"

namespace hc {

class cuda_copy_floor {
 public:
  /// Two device buffers and one pinned host buffer of `bytes` each on `device`.
  static result<std::unique_ptr<cuda_copy_floor>> create(std::uint32_t device, std::size_t bytes);
  virtual ~cuda_copy_floor() = default;
  virtual status device_to_device() = 0;
  virtual status device_memset() = 0;
  virtual status host_to_device() = 0;
  virtual status device_to_host() = 0;
};

}  // namespace hc
