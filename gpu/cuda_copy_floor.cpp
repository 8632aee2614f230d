// The device's plain copy speeds (gpu/cuda_copy_floor.hpp).
#include "gpu/cuda_copy_floor.hpp"

#include <cuda_runtime.h>

#include "gpu/cuda_error.hpp"

namespace hc {
namespace {

class floor_impl final : public cuda_copy_floor {
 public:
  floor_impl(std::uint32_t device, std::size_t bytes) : device_(device), bytes_(bytes) {}
  floor_impl(const floor_impl&) = delete;
  floor_impl& operator=(const floor_impl&) = delete;
  ~floor_impl() override {
    if (cudaSetDevice(static_cast<int>(device_)) != cudaSuccess) return;
    if (stream_) (void)cudaStreamDestroy(stream_);
    if (a_) (void)cudaFree(a_);
    if (b_) (void)cudaFree(b_);
    if (host_) (void)cudaFreeHost(host_);
  }

  status init() {
    if (status s = gpu::cuda_status(cudaSetDevice(static_cast<int>(device_)), "cudaSetDevice"); !s)
      return s;
    if (status s = gpu::cuda_status(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                                    "cudaStreamCreateWithFlags");
        !s)
      return s;
    if (status s = gpu::cuda_status(cudaMalloc(&a_, bytes_), "cudaMalloc"); !s) return s;
    if (status s = gpu::cuda_status(cudaMalloc(&b_, bytes_), "cudaMalloc"); !s) return s;
    return gpu::cuda_status(cudaMallocHost(&host_, bytes_), "cudaMallocHost");
  }

  status device_to_device() override {
    return wait(cudaMemcpyAsync(b_, a_, bytes_, cudaMemcpyDeviceToDevice, stream_));
  }
  status device_memset() override { return wait(cudaMemsetAsync(a_, 0, bytes_, stream_)); }
  status host_to_device() override {
    return wait(cudaMemcpyAsync(a_, host_, bytes_, cudaMemcpyHostToDevice, stream_));
  }
  status device_to_host() override {
    return wait(cudaMemcpyAsync(host_, a_, bytes_, cudaMemcpyDeviceToHost, stream_));
  }

 private:
  status wait(cudaError_t queued) {
    if (status s = gpu::cuda_status(queued, "cudaMemcpyAsync"); !s) return s;
    return gpu::cuda_status(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  std::uint32_t device_;
  std::size_t bytes_;
  cudaStream_t stream_ = nullptr;
  void* a_ = nullptr;
  void* b_ = nullptr;
  void* host_ = nullptr;
};

}  // namespace

result<std::unique_ptr<cuda_copy_floor>> cuda_copy_floor::create(std::uint32_t device,
                                                                 std::size_t bytes) {
  auto f = std::make_unique<floor_impl>(device, bytes);
  if (status s = f->init(); !s) return s.err();
  return std::unique_ptr<cuda_copy_floor>(std::move(f));
}

}  // namespace hc
