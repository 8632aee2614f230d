// The toy forward's kernels: one thread per KV word, per (item, layer, lane or conv window),
// per (fix, layer), each doing what gpu/toy_forward_ops.hpp says (run_on_host's loops).
#include <cuda_runtime.h>

#include "gpu/cuda_toy_kernels.hpp"

namespace hc::gpu {
namespace {

constexpr unsigned threads_per_block = 128;

__global__ void kv_kernel(toy::shape s, unsigned char* kv, toy_batch_view b) {
  const std::size_t words = s.kv_layers * s.layer_words();
  const std::size_t total = b.n_tokens * words;
  for (std::size_t x = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; x < total;
       x += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t g = x / words;
    toy::write_kv_word(s, kv, b.kv_rows[g], b.positions[g], b.tokens[g], x % words);
  }
}

__global__ void scan_kernel(toy::shape s, unsigned char* ssm, toy_batch_view b) {
  const std::size_t units = std::size_t{s.lanes} + 1;  // the lanes, then the conv window
  const std::size_t per_item = s.ssm_layers * units;
  const std::size_t total = b.n_items * per_item;
  for (std::size_t x = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; x < total;
       x += std::size_t{gridDim.x} * blockDim.x) {
    const auto i = static_cast<std::uint32_t>(x / per_item);
    const std::size_t layer = (x % per_item) / units;
    const std::size_t u = (x % per_item) % units;
    if (u < s.lanes) {
      toy::scan_lane(s, ssm, b.items[i], i, b.tokens, b.captures, b.n_captures, layer, u);
    } else {
      toy::scan_conv(s, ssm, b.items[i], b.tokens, layer);
    }
  }
}

__global__ void fix_kernel(toy::shape s, unsigned char* ssm, toy_batch_view b) {
  const std::size_t total = std::size_t{b.n_fixes} * s.ssm_layers;
  for (std::size_t x = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; x < total;
       x += std::size_t{gridDim.x} * blockDim.x)
    toy::apply_fix(s, ssm, b.fixes[x / s.ssm_layers], b.conv_values, x % s.ssm_layers);
}

unsigned blocks_for(std::size_t threads) {
  const std::size_t b = (threads + threads_per_block - 1) / threads_per_block;
  return static_cast<unsigned>(b < 1024 ? b : 1024);  // grid-stride beyond
}

}  // namespace

int launch_toy_forward(void* stream, const toy::shape& s, unsigned char* kv, unsigned char* ssm,
                       const toy_batch_view& b) {
  auto st = static_cast<cudaStream_t>(stream);
  const std::size_t kv_threads = b.n_tokens * s.kv_layers * s.layer_words();
  if (kv_threads > 0) kv_kernel<<<blocks_for(kv_threads), threads_per_block, 0, st>>>(s, kv, b);
  const std::size_t scan_threads = b.n_items * s.ssm_layers * (std::size_t{s.lanes} + 1);
  if (scan_threads > 0)
    scan_kernel<<<blocks_for(scan_threads), threads_per_block, 0, st>>>(s, ssm, b);
  const std::size_t fix_threads = std::size_t{b.n_fixes} * s.ssm_layers;
  if (fix_threads > 0) fix_kernel<<<blocks_for(fix_threads), threads_per_block, 0, st>>>(s, ssm, b);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace hc::gpu
