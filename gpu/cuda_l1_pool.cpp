// The CUDA L1 pools (gpu/cuda_l1_pool.hpp). C++20 host code over the CUDA runtime API;
// the kernels are in gpu/cuda_kernels.cu.
#include "gpu/cuda_l1_pool.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpu/cuda_error.hpp"
#include "gpu/cuda_kernels.hpp"

namespace hc {
namespace {

using gpu::cuda_error;
status check(cudaError_t e, std::string_view call) {
  return gpu::cuda_status(e, call);
}

std::string ipc_handle_of(void* p) {
  cudaIpcMemHandle_t h{};
  if (p == nullptr || cudaIpcGetMemHandle(&h, p) != cudaSuccess) return {};
  return {reinterpret_cast<const char*>(&h), sizeof h};
}

/// Host memory pinned through pin_host and its address on the device, shared with the
/// guards pin_host returns (a guard may be dropped on any thread, after the pool).
class pinned_regions {
 public:
  void add(std::byte* host, std::size_t n, std::byte* dev) {
    std::lock_guard lock(m_);
    regions_.push_back({host, n, dev});
  }
  void remove(const void* host) {
    std::lock_guard lock(m_);
    std::erase_if(regions_, [host](const region& r) { return r.host == host; });
  }
  /// The device address of host bytes [p, p + n), or null if no pinned region holds them.
  void* device_address(const std::byte* p, std::size_t n) const {
    std::lock_guard lock(m_);
    for (const region& r : regions_)
      if (p >= r.host && n <= r.size && static_cast<std::size_t>(p - r.host) <= r.size - n)
        return r.dev + (p - r.host);
    return nullptr;
  }

 private:
  struct region {
    std::byte* host;
    std::size_t size;
    std::byte* dev;
  };
  mutable std::mutex m_;
  std::vector<region> regions_;
};

class cuda_l1_pool final : public l1_pool {
 public:
  explicit cuda_l1_pool(const cuda_pool_shape& s) : shape_(s) {
    names_.device = device_kind::cuda;
    names_.device_ordinal = s.device;
  }
  cuda_l1_pool(const cuda_l1_pool&) = delete;
  cuda_l1_pool& operator=(const cuda_l1_pool&) = delete;

  ~cuda_l1_pool() override {
    if (!use_device()) return;
    for (auto& [s, e] : events_)
      destroy(e);
    if (stream_) {
      (void)cudaStreamSynchronize(stream_);
      (void)cudaStreamDestroy(stream_);
    }
    if (kv_) (void)cudaFree(kv_);
    if (ssm_) (void)cudaFree(ssm_);
  }

  /// Allocates, zeroes and exports the pools. The object is usable only if this succeeded.
  status init() {
    int count = 0;
    if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess)
      return cuda_error(e, "cudaGetDeviceCount");
    if (shape_.device >= static_cast<std::uint32_t>(count))
      return {errc::invalid_config, "device cuda: CUDA device " + std::to_string(shape_.device) +
                                        " does not exist (" + std::to_string(count) + " devices)"};
    if (status s = use_device(); !s) return s;
    if (status s = check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                         "cudaStreamCreateWithFlags");
        !s)
      return s;
    if (status s = allocate(kv_, shape_.kv_tokens * shape_.token_bytes, "KV pool"); !s) return s;
    if (status s = allocate(ssm_, shape_.slots * shape_.slot_bytes, "SSM pool"); !s) return s;
    names_.kv_bytes = kv_ ? shape_.kv_tokens * shape_.token_bytes : 0;
    names_.ssm_bytes = ssm_ ? shape_.slots * shape_.slot_bytes : 0;
    names_.kv_ipc = ipc_handle_of(kv_);
    names_.ssm_ipc = ipc_handle_of(ssm_);
    if ((kv_ && names_.kv_ipc.empty()) || (ssm_ && names_.ssm_ipc.empty()))
      return {errc::io_error, "cudaIpcGetMemHandle failed for the L1 pools"};
    return synchronize();
  }

  std::size_t token_bytes() const noexcept override { return shape_.token_bytes; }
  std::size_t kv_tokens() const noexcept override {
    return shape_.token_bytes ? shape_.kv_tokens : 0;
  }
  std::size_t slot_bytes() const noexcept override { return shape_.slot_bytes; }
  std::size_t slots() const noexcept override { return shape_.slot_bytes ? shape_.slots : 0; }
  l1_pool_names names() const override { return names_; }

  status clear_slot(slot_id s) override {
    if (status st = check_slot(s); !st) return st;
    if (status st = use_device(); !st) return st;
    return check(cudaMemsetAsync(slot_ptr(s), 0, shape_.slot_bytes, stream_), "cudaMemsetAsync");
  }

  status copy_slot(slot_id src, slot_id dst) override {
    if (status st = check_copy({src, dst}); !st) return st;
    if (status st = use_device(); !st) return st;
    return check(cudaMemcpyAsync(slot_ptr(dst), slot_ptr(src), shape_.slot_bytes,
                                 cudaMemcpyDeviceToDevice, stream_),
                 "cudaMemcpyAsync D2D");
  }

  status read_kv(kv_index first, std::size_t n, std::span<std::byte> dst) const override {
    return kv_to_host(first, n, dst, true);
  }
  status write_kv(kv_index first, std::size_t n, std::span<const std::byte> src) override {
    return kv_to_device(first, n, src, true);
  }
  status read_slot(slot_id s, std::span<std::byte> dst) const override {
    return slot_to_host(s, dst, true);
  }
  status write_slot(slot_id s, std::span<const std::byte> src) override {
    return slot_to_device(s, src, true);
  }
  status queue_read_kv(kv_index first, std::size_t n, std::span<std::byte> dst) override {
    return kv_to_host(first, n, dst, false);
  }
  status queue_write_kv(kv_index first, std::size_t n, std::span<const std::byte> src) override {
    return kv_to_device(first, n, src, false);
  }
  status queue_read_slot(slot_id s, std::span<std::byte> dst) override {
    return slot_to_host(s, dst, false);
  }
  status queue_write_slot(slot_id s, std::span<const std::byte> src) override {
    return slot_to_device(s, src, false);
  }

  status queue_read_kv_runs(std::span<const kv_run> runs) override { return kv_runs(runs, true); }
  status queue_write_kv_runs(std::span<const kv_run> runs) override { return kv_runs(runs, false); }

  std::size_t clear_slots(std::span<const slot_id> slots) override {
    std::vector<std::int32_t> ok;
    ok.reserve(slots.size());
    for (slot_id s : slots)
      if (check_slot(s)) ok.push_back(s);
    std::size_t refused = slots.size() - ok.size();
    if (ok.empty() || !use_device()) return slots.size();
    for (std::size_t i = 0; i < ok.size(); i += gpu::max_slots_per_launch) {
      const std::size_t n = std::min(gpu::max_slots_per_launch, ok.size() - i);
      if (gpu::launch_clear_slots(ssm_, shape_.slot_bytes, ok.data() + i, n, stream_) !=
          cudaSuccess)
        refused += n;
    }
    return refused;
  }

  std::size_t copy_slots(std::span<const slot_copy> copies) override {
    std::vector<slot_copy> ok;
    ok.reserve(copies.size());
    for (slot_copy c : copies)
      if (check_copy(c)) ok.push_back(c);
    std::size_t refused = copies.size() - ok.size();
    if (ok.empty() || !use_device()) return copies.size();
    std::vector<std::int32_t> src, dst;
    std::size_t begin = 0;
    for (std::size_t end : independent_runs(ok)) {
      for (std::size_t i = begin; i < end; i += gpu::max_slots_per_launch) {
        const std::size_t n = std::min(gpu::max_slots_per_launch, end - i);
        src.clear();
        dst.clear();
        for (std::size_t k = i; k < i + n; ++k) {
          src.push_back(ok[k].src);
          dst.push_back(ok[k].dst);
        }
        if (gpu::launch_copy_slots(ssm_, shape_.slot_bytes, src.data(), dst.data(), n, stream_) !=
            cudaSuccess)
          refused += n;
      }
      begin = end;
    }
    return refused;
  }

  status synchronize() override {
    if (status st = use_device(); !st) return st;
    return check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  void when_done(std::function<void()> done) override {
    auto* fn = new std::function<void()>(std::move(done));
    if (use_device() && cudaLaunchHostFunc(stream_, run_and_delete, fn) == cudaSuccess) return;
    (void)cudaGetLastError();  // could not queue it: wait here instead, then call it
    (void)synchronize();
    run_and_delete(fn);
  }

  result<std::shared_ptr<void>> pin_host(std::span<std::byte> region) override {
    if (region.empty()) return std::shared_ptr<void>();
    if (status st = use_device(); !st) return st.err();
    constexpr unsigned flags = cudaHostRegisterPortable | cudaHostRegisterMapped;
    if (status st =
            check(cudaHostRegister(region.data(), region.size(), flags), "cudaHostRegister");
        !st)
      return st.err();
    void* dev = nullptr;  // where the tier-copy kernel reaches it (kv_runs)
    if (cudaHostGetDevicePointer(&dev, region.data(), 0) == cudaSuccess) {
      pinned_->add(region.data(), region.size(), static_cast<std::byte*>(dev));
    } else {
      (void)cudaGetLastError();  // not mapped: its copies go by copy engine
    }
    return std::shared_ptr<void>(region.data(), [pinned = pinned_](void* p) {
      pinned->remove(p);
      (void)cudaHostUnregister(p);
    });
  }

  result<session_events> open_events(session_id s) override {
    if (events_.contains(s)) return names_of(events_.at(s));
    if (status st = use_device(); !st) return st.err();
    event_pair e;
    constexpr unsigned flags = cudaEventDisableTiming | cudaEventInterprocess;
    status st = check(cudaEventCreateWithFlags(&e.ready, flags), "cudaEventCreateWithFlags");
    if (st) st = check(cudaEventCreateWithFlags(&e.done, flags), "cudaEventCreateWithFlags");
    if (!st) {
      destroy(e);
      return st.err();
    }
    auto names = names_of(e);
    if (!names) {
      destroy(e);
      return names.err();
    }
    events_.emplace(s, e);
    return names;
  }

  void close_events(session_id s) override {
    auto it = events_.find(s);
    if (it == events_.end() || !use_device()) return;
    destroy(it->second);  // CUDA frees an event once the work it waits for is done
    events_.erase(it);
  }

  status record_ready(session_id s) override {
    auto it = events_.find(s);
    if (it == events_.end()) return {};  // a session that never asked for events
    if (status st = use_device(); !st) return st;
    return check(cudaEventRecord(it->second.ready, stream_), "cudaEventRecord");
  }

  status wait_done(session_id s) override {
    auto it = events_.find(s);
    if (it == events_.end()) return {};
    if (status st = use_device(); !st) return st;
    return check(cudaStreamWaitEvent(stream_, it->second.done, 0), "cudaStreamWaitEvent");
  }

 private:
  status use_device() const {
    return check(cudaSetDevice(static_cast<int>(shape_.device)), "cudaSetDevice");
  }

  status allocate(std::byte*& p, std::size_t bytes, const char* what) {
    if (bytes == 0) return {};
    void* raw = nullptr;
    if (const cudaError_t e = cudaMalloc(&raw, bytes); e != cudaSuccess) {
      error err = cuda_error(e, "cudaMalloc");
      err.message = std::string(what) + " of " + std::to_string(bytes) + " bytes: " + err.message;
      return err;
    }
    p = static_cast<std::byte*>(raw);
    return check(cudaMemsetAsync(p, 0, bytes, stream_), "cudaMemsetAsync");
  }

  std::byte* slot_ptr(slot_id s) const {
    return ssm_ + static_cast<std::size_t>(s) * shape_.slot_bytes;
  }

  status kv_to_host(kv_index first, std::size_t n, std::span<std::byte> dst, bool wait) const {
    if (status st = check_kv(first, n, dst.size()); !st) return st;
    return copy(dst.data(), kv_ + static_cast<std::size_t>(first) * shape_.token_bytes, dst.size(),
                cudaMemcpyDeviceToHost, wait);
  }
  status kv_to_device(kv_index first, std::size_t n, std::span<const std::byte> src, bool wait) {
    if (status st = check_kv(first, n, src.size()); !st) return st;
    return copy(kv_ + static_cast<std::size_t>(first) * shape_.token_bytes, src.data(), src.size(),
                cudaMemcpyHostToDevice, wait);
  }
  status slot_to_host(slot_id s, std::span<std::byte> dst, bool wait) const {
    if (status st = check_slot(s); !st) return st;
    if (status st = check_slot_buffer(dst.size()); !st) return st;
    return copy(dst.data(), slot_ptr(s), dst.size(), cudaMemcpyDeviceToHost, wait);
  }
  status slot_to_device(slot_id s, std::span<const std::byte> src, bool wait) {
    if (status st = check_slot(s); !st) return st;
    if (status st = check_slot_buffer(src.size()); !st) return st;
    return copy(slot_ptr(s), src.data(), src.size(), cudaMemcpyHostToDevice, wait);
  }

  /// One copy per run: device memory and the host memory as the host sees it.
  struct run_copies {
    std::vector<void*> dst;
    std::vector<const void*> src;
    std::vector<std::size_t> bytes;
  };

  /// Every run D→H (`to_host`) or H→D, queued on the stream after everything before it,
  /// by the path cuda_pool_shape::tier_copies chooses (by_kernel, by_copy_engine). Either
  /// way one submission instead of one per page, which left the copy engines idle between
  /// pages.
  status kv_runs(std::span<const kv_run> runs, bool to_host) {
    if (status st = check_kv_runs(runs); !st) return st;
    if (runs.empty()) return {};
    if (status st = use_device(); !st) return st;
    run_copies c;
    std::size_t total = 0;
    for (const kv_run& r : runs) {
      std::byte* dev = kv_ + static_cast<std::size_t>(r.first) * shape_.token_bytes;
      c.dst.push_back(to_host ? static_cast<void*>(r.host.data()) : dev);
      c.src.push_back(to_host ? static_cast<const void*>(dev) : r.host.data());
      c.bytes.push_back(r.host.size());
      total += r.host.size();
    }
    if (use_kernel(runs.size(), total))
      if (std::optional<status> st = by_kernel(c, to_host)) return *st;
    return by_copy_engine(c, to_host);
  }

  /// One kernel launch per max_runs_per_launch runs, over the host memory's addresses on
  /// the device; nullopt (nothing queued) when some run's host memory was not pinned
  /// through pin_host, which the kernel cannot reach.
  std::optional<status> by_kernel(run_copies c, bool to_host) const {
    for (std::size_t i = 0; i < c.bytes.size(); ++i) {
      const auto* h = static_cast<const std::byte*>(to_host ? c.dst[i] : c.src[i]);
      void* mapped = pinned_->device_address(h, c.bytes[i]);
      if (mapped == nullptr) return std::nullopt;
      if (to_host) {
        c.dst[i] = mapped;
      } else {
        c.src[i] = mapped;
      }
    }
    for (std::size_t i = 0; i < c.bytes.size(); i += gpu::max_runs_per_launch) {
      const std::size_t n = std::min(gpu::max_runs_per_launch, c.bytes.size() - i);
      if (status st = check(gpu::launch_copy_runs(c.dst.data() + i, c.src.data() + i,
                                                  c.bytes.data() + i, n, stream_),
                            "launch_copy_runs");
          !st)
        return st;
    }
    return status{};
  }

  /// One cudaMemcpyBatchAsync (a driver without it: one cudaMemcpyAsync per run).
  status by_copy_engine(run_copies& c, bool to_host) {
    if (c.bytes.size() > 1 && batched_copies_) {
      cudaMemcpyAttributes attr{};
      attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
      attr.flags = cudaMemcpyFlagPreferOverlapWithCompute;
      std::size_t first = 0;
      const cudaError_t e = cudaMemcpyBatchAsync(c.dst.data(), c.src.data(), c.bytes.data(),
                                                 c.bytes.size(), &attr, &first, 1, stream_);
      if (e == cudaSuccess) return {};
      if (e != cudaErrorNotSupported && e != cudaErrorCallRequiresNewerDriver)
        return cuda_error(e, "cudaMemcpyBatchAsync");
      (void)cudaGetLastError();
      batched_copies_ = false;
    }
    const cudaMemcpyKind kind = to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
    for (std::size_t i = 0; i < c.bytes.size(); ++i)
      if (status st = check(cudaMemcpyAsync(c.dst[i], c.src[i], c.bytes[i], kind, stream_),
                            "cudaMemcpyAsync");
          !st)
        return st;
    return {};
  }

  bool use_kernel(std::size_t runs, std::size_t bytes) const {
    switch (shape_.tier_copies) {
      case tier_copy_path::kernel:
        return true;
      case tier_copy_path::copy_engine:
        return false;
      case tier_copy_path::automatic:
        break;
    }
    return runs > 1 && bytes / runs < shape_.kernel_below_bytes;
  }

  /// Queues the copy after every change queued before it; `wait`: and waits for it (the
  /// caller's buffer may be pageable memory that goes away once the call returns).
  status copy(void* to, const void* from, std::size_t n, cudaMemcpyKind kind, bool wait) const {
    if (n == 0) return {};
    if (status st = use_device(); !st) return st;
    if (status st = check(cudaMemcpyAsync(to, from, n, kind, stream_), "cudaMemcpyAsync"); !st)
      return st;
    if (!wait) return {};
    return check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  struct event_pair {
    cudaEvent_t ready = nullptr, done = nullptr;
  };
  static void destroy(event_pair& e) {
    if (e.ready) (void)cudaEventDestroy(e.ready);
    if (e.done) (void)cudaEventDestroy(e.done);
    e = {};
  }
  static result<session_events> names_of(const event_pair& e) {
    cudaIpcEventHandle_t ready{}, done{};
    if (status st = check(cudaIpcGetEventHandle(&ready, e.ready), "cudaIpcGetEventHandle"); !st)
      return st.err();
    if (status st = check(cudaIpcGetEventHandle(&done, e.done), "cudaIpcGetEventHandle"); !st)
      return st.err();
    return session_events{{reinterpret_cast<const char*>(&ready), sizeof ready},
                          {reinterpret_cast<const char*>(&done), sizeof done}};
  }
  static void CUDART_CB run_and_delete(void* p) {
    auto* fn = static_cast<std::function<void()>*>(p);
    (*fn)();
    delete fn;
  }

  cuda_pool_shape shape_;
  l1_pool_names names_;
  std::unordered_map<session_id, event_pair> events_;
  cudaStream_t stream_ = nullptr;
  bool batched_copies_ = true;  ///< false once the driver said it has no cudaMemcpyBatchAsync
  std::shared_ptr<pinned_regions> pinned_ = std::make_shared<pinned_regions>();
  std::byte* kv_ = nullptr;
  std::byte* ssm_ = nullptr;
};

}  // namespace

result<std::unique_ptr<l1_pool>> make_cuda_l1_pool(const cuda_pool_shape& shape) {
  auto pool = std::make_unique<cuda_l1_pool>(shape);
  if (status s = pool->init(); !s) return s.err();
  return std::unique_ptr<l1_pool>(std::move(pool));
}

}  // namespace hc
