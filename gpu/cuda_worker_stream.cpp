// A worker's CUDA stream and its session's fence events (gpu/cuda_worker_stream.hpp).
#include "gpu/cuda_worker_stream.hpp"

#include <cuda_runtime.h>

#include <cstring>
#include <string>

#include "gpu/cuda_error.hpp"

namespace hc {
namespace {

class stream_impl final : public cuda_worker_stream {
 public:
  explicit stream_impl(std::uint32_t device) : device_(device) {}
  stream_impl(const stream_impl&) = delete;
  stream_impl& operator=(const stream_impl&) = delete;
  ~stream_impl() override {
    if (!use_device()) return;
    if (stream_) {
      (void)cudaStreamSynchronize(stream_);
      (void)cudaStreamDestroy(stream_);
    }
    if (ready_) (void)cudaEventDestroy(ready_);
    if (done_) (void)cudaEventDestroy(done_);
  }

  status init(std::string_view ready, std::string_view done) {
    if (status s = use_device(); !s) return s;
    if (status s = gpu::cuda_status(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                                    "cudaStreamCreateWithFlags");
        !s)
      return s;
    if (status s = open_event(ready, ready_); !s) return s;
    return open_event(done, done_);
  }

  status wait_ready() override {
    if (status s = use_device(); !s) return s;
    return gpu::cuda_status(cudaStreamWaitEvent(stream_, ready_, 0), "cudaStreamWaitEvent");
  }
  status record_done() override {
    if (status s = use_device(); !s) return s;
    return gpu::cuda_status(cudaEventRecord(done_, stream_), "cudaEventRecord");
  }
  status read(const cuda_ipc_mapping& m, std::size_t offset, std::span<std::byte> dst) override {
    if (status s = m.check_range(offset, dst.size()); !s) return s;
    return copy(dst.data(), static_cast<const std::byte*>(m.device_ptr()) + offset, dst.size(),
                cudaMemcpyDeviceToHost);
  }
  status write(cuda_ipc_mapping& m, std::size_t offset, std::span<const std::byte> src) override {
    if (status s = m.check_range(offset, src.size()); !s) return s;
    return copy(static_cast<std::byte*>(m.device_ptr()) + offset, src.data(), src.size(),
                cudaMemcpyHostToDevice);
  }
  void* handle() const noexcept override { return stream_; }

 private:
  status use_device() const {
    return gpu::cuda_status(cudaSetDevice(static_cast<int>(device_)), "cudaSetDevice");
  }
  static status open_event(std::string_view handle, cudaEvent_t& e) {
    cudaIpcEventHandle_t h{};
    if (handle.size() != sizeof h)
      return {errc::invalid_argument, "a CUDA IPC event handle has " + std::to_string(sizeof h) +
                                          " bytes, not " + std::to_string(handle.size())};
    std::memcpy(&h, handle.data(), sizeof h);
    return gpu::cuda_status(cudaIpcOpenEventHandle(&e, h), "cudaIpcOpenEventHandle");
  }
  status copy(void* to, const void* from, std::size_t n, cudaMemcpyKind kind) {
    if (n == 0) return {};
    if (status s = use_device(); !s) return s;
    if (status s = gpu::cuda_status(cudaMemcpyAsync(to, from, n, kind, stream_), "cudaMemcpyAsync");
        !s)
      return s;
    return gpu::cuda_status(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  std::uint32_t device_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr, done_ = nullptr;
};

}  // namespace

result<std::unique_ptr<cuda_worker_stream>> cuda_worker_stream::create(std::uint32_t device,
                                                                       std::string_view ready,
                                                                       std::string_view done) {
  auto s = std::make_unique<stream_impl>(device);
  if (status st = s->init(ready, done); !st) return st.err();
  return std::unique_ptr<cuda_worker_stream>(std::move(s));
}

}  // namespace hc
