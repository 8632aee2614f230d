// A node's CUDA pool mapped into a worker (gpu/cuda_ipc_mapping.hpp).
#include "gpu/cuda_ipc_mapping.hpp"

#include <cuda_runtime.h>

#include "gpu/cuda_error.hpp"

#include <cstring>
#include <string>
#include <utility>

namespace hc {
namespace {

status check(cudaError_t e, std::string_view call) {
  return gpu::cuda_status(e, call);
}

}  // namespace

result<cuda_ipc_mapping> cuda_ipc_mapping::open(std::uint32_t device, std::string_view handle,
                                                std::size_t bytes) {
  cudaIpcMemHandle_t h{};
  if (handle.size() != sizeof h)
    return error{errc::invalid_argument, "a CUDA IPC handle has " + std::to_string(sizeof h) +
                                             " bytes, not " + std::to_string(handle.size())};
  std::memcpy(&h, handle.data(), sizeof h);
  if (status s = check(cudaSetDevice(static_cast<int>(device)), "cudaSetDevice"); !s)
    return s.err();
  cuda_ipc_mapping m;
  if (status s = check(cudaIpcOpenMemHandle(&m.ptr_, h, cudaIpcMemLazyEnablePeerAccess),
                       "cudaIpcOpenMemHandle");
      !s)
    return s.err();
  m.bytes_ = bytes;
  m.device_ = device;
  return m;
}

cuda_ipc_mapping::cuda_ipc_mapping(cuda_ipc_mapping&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_), device_(o.device_) {}

cuda_ipc_mapping& cuda_ipc_mapping::operator=(cuda_ipc_mapping&& o) noexcept {
  if (this != &o) {
    close();
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = o.bytes_;
    device_ = o.device_;
  }
  return *this;
}

cuda_ipc_mapping::~cuda_ipc_mapping() {
  close();
}

void cuda_ipc_mapping::close() noexcept {
  if (ptr_ == nullptr) return;
  (void)cudaSetDevice(static_cast<int>(device_));
  (void)cudaIpcCloseMemHandle(ptr_);
  ptr_ = nullptr;
}

status cuda_ipc_mapping::read(std::size_t offset, std::span<std::byte> dst) const {
  if (status s = check_range(offset, dst.size()); !s) return s;
  if (dst.empty()) return {};
  if (status s = check(cudaSetDevice(static_cast<int>(device_)), "cudaSetDevice"); !s) return s;
  return check(cudaMemcpy(dst.data(), static_cast<const std::byte*>(ptr_) + offset, dst.size(),
                          cudaMemcpyDeviceToHost),
               "cudaMemcpy D2H");
}

status cuda_ipc_mapping::write(std::size_t offset, std::span<const std::byte> src) {
  if (status s = check_range(offset, src.size()); !s) return s;
  if (src.empty()) return {};
  if (status s = check(cudaSetDevice(static_cast<int>(device_)), "cudaSetDevice"); !s) return s;
  return check(cudaMemcpy(static_cast<std::byte*>(ptr_) + offset, src.data(), src.size(),
                          cudaMemcpyHostToDevice),
               "cudaMemcpy H2D");
}

}  // namespace hc
