// The toy forward on a CUDA stream, and device buffers for its tests
// (gpu/cuda_toy_forward.hpp).
#include "gpu/cuda_toy_forward.hpp"

#include <cuda_runtime.h>

#include <array>
#include <cstring>
#include <string>

#include "gpu/cuda_error.hpp"
#include "gpu/cuda_toy_kernels.hpp"

namespace hc {
namespace {

status use(std::uint32_t device) {
  return gpu::cuda_status(cudaSetDevice(static_cast<int>(device)), "cudaSetDevice");
}

/// Where each part of a batch lies in the staging and device buffers (16-byte aligned).
struct layout {
  std::size_t tokens = 0, positions = 0, kv_rows = 0, items = 0, captures = 0, fixes = 0,
              conv_values = 0, total = 0;

  explicit layout(const toy::forward_batch& b) {
    std::size_t at = 0;
    auto place = [&](std::size_t& field, std::size_t bytes) {
      field = at;
      at += (bytes + 15) / 16 * 16;
    };
    place(tokens, b.tokens.size() * sizeof(std::int32_t));
    place(positions, b.positions.size() * sizeof(std::uint64_t));
    place(kv_rows, b.kv_rows.size() * sizeof(std::int32_t));
    place(items, b.items.size() * sizeof(toy::scan_item));
    place(captures, b.captures.size() * sizeof(toy::capture));
    place(fixes, b.fixes.size() * sizeof(toy::conv_fix));
    place(conv_values, b.conv_values.size() * sizeof(std::int32_t));
    total = at;
  }
};

template <class T>
void put(std::byte* base, std::size_t at, const std::vector<T>& v) {
  if (!v.empty()) std::memcpy(base + at, v.data(), v.size() * sizeof(T));
}

class forward_impl final : public cuda_toy_forward {
 public:
  forward_impl(std::uint32_t device, const toy::shape& s) : device_(device), shape_(s) {}
  forward_impl(const forward_impl&) = delete;
  forward_impl& operator=(const forward_impl&) = delete;
  ~forward_impl() override {
    if (!use(device_).ok()) return;
    for (staging& st : staging_) {
      if (st.copied) {
        (void)cudaEventSynchronize(st.copied);
        (void)cudaEventDestroy(st.copied);
      }
      if (st.host) (void)cudaFreeHost(st.host);
    }
    if (device_buf_) (void)cudaFree(device_buf_);  // waits for the kernels that read it
  }

  status init() {
    if (status s = use(device_); !s) return s;
    for (staging& st : staging_)
      if (status s = gpu::cuda_status(cudaEventCreateWithFlags(&st.copied, cudaEventDisableTiming),
                                      "cudaEventCreateWithFlags");
          !s)
        return s;
    return {};
  }

  status enqueue(void* stream, void* kv, std::size_t kv_rows, void* ssm, std::size_t slots,
                 const toy::forward_batch& b) override {
    if (status s = b.check(shape_, kv_rows, slots); !s) return s;
    if ((!b.tokens.empty() && kv == nullptr) || (!b.items.empty() && ssm == nullptr))
      return {errc::invalid_argument, "toy forward batch: a pool it writes has no device memory"};
    const layout at(b);
    if (at.total == 0) return {};
    if (status s = use(device_); !s) return s;
    auto st = static_cast<cudaStream_t>(stream);
    // The device buffer is reused in stream order; growing it (a few times at the start)
    // first waits for the kernels that read the old one.
    if (at.total > device_bytes_) {
      if (device_buf_) {
        if (status s = gpu::cuda_status(cudaStreamSynchronize(st), "cudaStreamSynchronize"); !s)
          return s;
        (void)cudaFree(device_buf_);
      }
      device_buf_ = nullptr;
      device_bytes_ = 0;
      const std::size_t want = std::max<std::size_t>(at.total * 2, 64 << 10);
      if (status s = gpu::cuda_status(cudaMalloc(&device_buf_, want), "cudaMalloc"); !s) return s;
      device_bytes_ = want;
    }
    staging& sg = staging_[next_];
    next_ = 1 - next_;
    if (status s = gpu::cuda_status(cudaEventSynchronize(sg.copied), "cudaEventSynchronize"); !s)
      return s;
    if (at.total > sg.bytes) {
      if (sg.host) (void)cudaFreeHost(sg.host);
      sg.host = nullptr;
      sg.bytes = 0;
      const std::size_t want = std::max<std::size_t>(at.total * 2, 64 << 10);
      if (status s = gpu::cuda_status(cudaMallocHost(&sg.host, want), "cudaMallocHost"); !s)
        return s;
      sg.bytes = want;
    }
    auto* h = static_cast<std::byte*>(sg.host);
    put(h, at.tokens, b.tokens);
    put(h, at.positions, b.positions);
    put(h, at.kv_rows, b.kv_rows);
    put(h, at.items, b.items);
    put(h, at.captures, b.captures);
    put(h, at.fixes, b.fixes);
    put(h, at.conv_values, b.conv_values);
    if (status s = gpu::cuda_status(
            cudaMemcpyAsync(device_buf_, sg.host, at.total, cudaMemcpyHostToDevice, st),
            "cudaMemcpyAsync");
        !s)
      return s;
    if (status s = gpu::cuda_status(cudaEventRecord(sg.copied, st), "cudaEventRecord"); !s)
      return s;
    auto* d = static_cast<std::byte*>(device_buf_);
    gpu::toy_batch_view v;
    v.tokens = reinterpret_cast<const std::int32_t*>(d + at.tokens);
    v.positions = reinterpret_cast<const std::uint64_t*>(d + at.positions);
    v.kv_rows = reinterpret_cast<const std::int32_t*>(d + at.kv_rows);
    v.items = reinterpret_cast<const toy::scan_item*>(d + at.items);
    v.captures = reinterpret_cast<const toy::capture*>(d + at.captures);
    v.fixes = reinterpret_cast<const toy::conv_fix*>(d + at.fixes);
    v.conv_values = reinterpret_cast<const std::int32_t*>(d + at.conv_values);
    v.n_tokens = static_cast<std::uint32_t>(b.tokens.size());
    v.n_items = static_cast<std::uint32_t>(b.items.size());
    v.n_captures = static_cast<std::uint32_t>(b.captures.size());
    v.n_fixes = static_cast<std::uint32_t>(b.fixes.size());
    const int e = gpu::launch_toy_forward(stream, shape_, static_cast<unsigned char*>(kv),
                                          static_cast<unsigned char*>(ssm), v);
    return gpu::cuda_status(static_cast<cudaError_t>(e), "launch_toy_forward");
  }

 private:
  struct staging {
    void* host = nullptr;
    std::size_t bytes = 0;
    cudaEvent_t copied = nullptr;  ///< after the last copy out of `host`
  };
  std::uint32_t device_;
  toy::shape shape_;
  std::array<staging, 2> staging_{};
  int next_ = 0;
  void* device_buf_ = nullptr;
  std::size_t device_bytes_ = 0;
};

class buffer_impl final : public cuda_device_buffer {
 public:
  buffer_impl(std::uint32_t device, std::size_t bytes) : device_(device), bytes_(bytes) {}
  buffer_impl(const buffer_impl&) = delete;
  buffer_impl& operator=(const buffer_impl&) = delete;
  ~buffer_impl() override {
    if (ptr_ && use(device_).ok()) (void)cudaFree(ptr_);
  }
  status init() {
    if (status s = use(device_); !s) return s;
    if (status s = gpu::cuda_status(cudaMalloc(&ptr_, bytes_), "cudaMalloc"); !s) return s;
    return gpu::cuda_status(cudaMemset(ptr_, 0, bytes_), "cudaMemset");
  }
  void* device_ptr() const noexcept override { return ptr_; }
  status write(std::span<const std::byte> src) override {
    if (src.size() != bytes_) return size_error(src.size());
    if (status s = use(device_); !s) return s;
    return gpu::cuda_status(cudaMemcpy(ptr_, src.data(), bytes_, cudaMemcpyHostToDevice),
                            "cudaMemcpy");
  }
  status read(std::span<std::byte> dst) override {
    if (dst.size() != bytes_) return size_error(dst.size());
    if (status s = use(device_); !s) return s;
    return gpu::cuda_status(cudaMemcpy(dst.data(), ptr_, bytes_, cudaMemcpyDeviceToHost),
                            "cudaMemcpy");
  }

 private:
  status size_error(std::size_t n) const {
    return {errc::invalid_argument, "a device buffer of " + std::to_string(bytes_) +
                                        " bytes copied as " + std::to_string(n)};
  }
  std::uint32_t device_;
  std::size_t bytes_;
  void* ptr_ = nullptr;
};

}  // namespace

result<std::unique_ptr<cuda_toy_forward>> cuda_toy_forward::create(std::uint32_t device,
                                                                   const toy::shape& s) {
  if (status st = toy::check_shape(s); !st) return st.err();
  auto f = std::make_unique<forward_impl>(device, s);
  if (status st = f->init(); !st) return st.err();
  return std::unique_ptr<cuda_toy_forward>(std::move(f));
}

result<std::unique_ptr<cuda_device_buffer>> cuda_device_buffer::create(std::uint32_t device,
                                                                       std::size_t bytes) {
  auto b = std::make_unique<buffer_impl>(device, bytes);
  if (status st = b->init(); !st) return st.err();
  return std::unique_ptr<cuda_device_buffer>(std::move(b));
}

}  // namespace hc
