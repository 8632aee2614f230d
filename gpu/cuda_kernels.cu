#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>

#include "gpu/cuda_kernels.hpp"

namespace hc::gpu {
namespace {

/// A launch's slots, passed by value in the kernel's parameters (2 KiB + 4 bytes; the
/// parameter space holds 4 KiB on every supported architecture).
struct slot_list {
  unsigned n;
  std::int32_t src[max_slots_per_launch];  // unused by clears
  std::int32_t dst[max_slots_per_launch];
};

/// Grid: y = the list's entry, x = a grid-stride loop over the slot's words. `Word` is the
/// widest access the slot size allows (16, 4 or 1 bytes; pools are cudaMalloc'd, so
/// 256-byte aligned, and every slot starts at a multiple of slot_bytes).
template <class Word, bool Clear>
__global__ void slot_kernel(unsigned char* base, std::size_t slot_bytes, slot_list l) {
  const unsigned i = blockIdx.y;
  const std::size_t words = slot_bytes / sizeof(Word);
  Word* d = reinterpret_cast<Word*>(base + static_cast<std::size_t>(l.dst[i]) * slot_bytes);
  const Word* s =
      Clear ? nullptr
            : reinterpret_cast<const Word*>(base + static_cast<std::size_t>(l.src[i]) * slot_bytes);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < words;
       k += stride) {
    if constexpr (Clear) {
      d[k] = Word{};
    } else {
      d[k] = s[k];
    }
  }
}

constexpr unsigned threads_per_block = 256;

/// Blocks the current device keeps resident at once (its SMs x its threads per SM /
/// threads_per_block: 1056 on an H100 or H200), read once per device. One big entry gets
/// them all, many small entries share them.
std::size_t resident_blocks() {
  constexpr int max_devices = 64;
  static std::atomic<std::size_t> known[max_devices]{};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= max_devices) return 1056;
  std::size_t blocks = known[device].load(std::memory_order_relaxed);
  if (blocks != 0) return blocks;
  int sms = 0, threads = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, device) !=
          cudaSuccess ||
      sms <= 0 || threads < static_cast<int>(threads_per_block)) {
    cudaGetLastError();  // leave no error for the launch to report
    return 1056;
  }
  blocks = static_cast<std::size_t>(sms) * (static_cast<std::size_t>(threads) / threads_per_block);
  known[device].store(blocks, std::memory_order_relaxed);
  return blocks;
}

/// The grid of a launch over n entries (y) of up to `blocks_wanted` blocks each (x, at
/// least 1): the device's resident blocks shared among the entries.
dim3 grid_for(std::size_t blocks_wanted, std::size_t n) {
  const std::size_t share = resident_blocks() / n;
  const std::size_t x = std::max<std::size_t>(1, std::min(blocks_wanted, share));
  return dim3(static_cast<unsigned>(x), static_cast<unsigned>(n));
}

template <bool Clear>
cudaError_t launch(void* base, std::size_t slot_bytes, const std::int32_t* src,
                   const std::int32_t* dst, std::size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (n > max_slots_per_launch) return cudaErrorInvalidValue;
  slot_list l{};
  l.n = static_cast<unsigned>(n);
  for (std::size_t i = 0; i < n; ++i) {
    l.dst[i] = dst[i];
    if (!Clear) l.src[i] = src[i];
  }
  const std::size_t word = slot_bytes % 16 == 0 ? 16 : slot_bytes % 4 == 0 ? 4 : 1;
  const std::size_t words = slot_bytes / word;
  const dim3 grid = grid_for((words + threads_per_block - 1) / threads_per_block, n);
  auto* b = static_cast<unsigned char*>(base);
  if (word == 16) {
    slot_kernel<uint4, Clear><<<grid, threads_per_block, 0, stream>>>(b, slot_bytes, l);
  } else if (word == 4) {
    slot_kernel<unsigned, Clear><<<grid, threads_per_block, 0, stream>>>(b, slot_bytes, l);
  } else {
    slot_kernel<unsigned char, Clear><<<grid, threads_per_block, 0, stream>>>(b, slot_bytes, l);
  }
  return cudaGetLastError();
}

/// A launch's runs, by value in the kernel's parameters (128 x 24 + 8 bytes).
struct run_list {
  unsigned n;
  unsigned aligned;  ///< every pointer and size a multiple of 16: uint4 accesses
  std::size_t bytes[max_runs_per_launch];
  unsigned char* dst[max_runs_per_launch];
  const unsigned char* src[max_runs_per_launch];
};

/// How many words a thread has in flight: across PCIe a read takes a microsecond or two,
/// so each thread issues several loads before its first store.
constexpr unsigned words_in_flight = 4;

/// Grid: y = the run, x = a grid-stride loop over its words, `words_in_flight` at a time.
template <class Word>
__global__ void runs_kernel(run_list l) {
  const unsigned i = blockIdx.y;
  const std::size_t words = l.bytes[i] / sizeof(Word);
  Word* d = reinterpret_cast<Word*>(l.dst[i]);
  const Word* s = reinterpret_cast<const Word*>(l.src[i]);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < words;
       k += stride * words_in_flight) {
    Word v[words_in_flight];
#pragma unroll
    for (unsigned u = 0; u < words_in_flight; ++u)
      if (k + u * stride < words) v[u] = s[k + u * stride];
#pragma unroll
    for (unsigned u = 0; u < words_in_flight; ++u)
      if (k + u * stride < words) d[k + u * stride] = v[u];
  }
}

}  // namespace

cudaError_t launch_copy_runs(void* const* dst, const void* const* src, const std::size_t* bytes,
                             std::size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (n > max_runs_per_launch) return cudaErrorInvalidValue;
  run_list l{};
  l.n = static_cast<unsigned>(n);
  l.aligned = 1;
  std::size_t largest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    l.bytes[i] = bytes[i];
    l.dst[i] = static_cast<unsigned char*>(dst[i]);
    l.src[i] = static_cast<const unsigned char*>(src[i]);
    if ((reinterpret_cast<std::uintptr_t>(dst[i]) | reinterpret_cast<std::uintptr_t>(src[i]) |
         bytes[i]) %
            16 !=
        0)
      l.aligned = 0;
    if (bytes[i] > largest) largest = bytes[i];
  }
  const std::size_t word = l.aligned ? 16 : 1;
  const std::size_t per_block = threads_per_block * words_in_flight;
  const dim3 grid = grid_for((largest / word + per_block - 1) / per_block, n);
  if (l.aligned) {
    runs_kernel<uint4><<<grid, threads_per_block, 0, stream>>>(l);
  } else {
    runs_kernel<unsigned char><<<grid, threads_per_block, 0, stream>>>(l);
  }
  return cudaGetLastError();
}

cudaError_t launch_clear_slots(void* base, std::size_t slot_bytes, const std::int32_t* slots,
                               std::size_t n, cudaStream_t stream) {
  return launch<true>(base, slot_bytes, nullptr, slots, n, stream);
}

cudaError_t launch_copy_slots(void* base, std::size_t slot_bytes, const std::int32_t* src,
                              const std::int32_t* dst, std::size_t n, cudaStream_t stream) {
  return launch<false>(base, slot_bytes, src, dst, n, stream);
}

}  // namespace hc::gpu
