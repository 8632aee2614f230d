#pragma once
// A worker's side of CUDA mode: a node's device pool (pool_info::kv_ipc_handle /
// ssm_ipc_handle) opened in this process with cudaIpcOpenMemHandle, closed when the mapping
// goes. The worker's kernels use device_ptr() directly; read / write are synchronous
// D→H / H→D copies (tests, checks). A handle cannot be opened in the process that exported
// it (CUDA's rule): the node's own process uses its pool.
//
// No CUDA header here (style habit 11): gpu/cuda_ipc_mapping.cpp, or in a build without
// CUDA gpu/no_cuda_ipc_mapping.cpp, whose open() refuses with invalid_config.
// Thread safety: none.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "actors/common/status.hpp"

namespace hc {

class cuda_ipc_mapping {
 public:
  /// Opens `handle` (cudaIpcMemHandle_t bytes, 64) on CUDA device `device`; `bytes` is the
  /// pool's size (pool_info::kv_bytes / ssm_bytes), which every access is checked against.
  static result<cuda_ipc_mapping> open(std::uint32_t device, std::string_view handle,
                                       std::size_t bytes);

  cuda_ipc_mapping() = default;
  cuda_ipc_mapping(cuda_ipc_mapping&& o) noexcept;
  cuda_ipc_mapping& operator=(cuda_ipc_mapping&& o) noexcept;
  cuda_ipc_mapping(const cuda_ipc_mapping&) = delete;
  cuda_ipc_mapping& operator=(const cuda_ipc_mapping&) = delete;
  ~cuda_ipc_mapping();

  void* device_ptr() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return bytes_; }
  /// invalid_argument unless bytes [offset, offset + n) lie in the pool.
  status check_range(std::size_t offset, std::size_t n) const {
    if (offset > bytes_ || n > bytes_ - offset)
      return {errc::invalid_argument, "bytes " + std::to_string(offset) + "+" + std::to_string(n) +
                                          " are past the pool's " + std::to_string(bytes_)};
    return {};
  }
  /// Bytes [offset, offset + dst.size()) to host memory; invalid_argument past the end.
  status read(std::size_t offset, std::span<std::byte> dst) const;
  /// Host bytes to [offset, offset + src.size()).
  status write(std::size_t offset, std::span<const std::byte> src);

 private:
  void close() noexcept;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  [[maybe_unused]] std::uint32_t device_ = 0;  // unused without CUDA
};

}  // namespace hc
