// hcbench on a GPU (issue 18; BENCHMARKS.md §9), every figure beside the device's own
// copy speed measured in the same run (gpu/cuda_copy_floor.hpp):
//
//   BM_CudaSlotCopy/<bytes>     copy_slots of 4 independent slot copies (one launch), waited
//   BM_CudaD2DFloor/<bytes>     cudaMemcpy device→device of the same 4 × bytes (HBM)
//   BM_CudaSlotClear/<bytes>    clear_slots of 8 slots (one launch), waited
//   BM_CudaMemsetFloor/<bytes>  cudaMemset of the same 8 × bytes
//   BM_CudaPagesToHost/<bytes>/<path>  64 KV pages L1 → pinned L2 through run_tier_copy,
//                               scattered host pages (the backup path), waited; path 0 =
//                               the pool's automatic choice, 1 = kernel, 2 = copy engine
//   BM_CudaD2HFloor/<bytes>     cudaMemcpy device→pinned host of the same 64 pages (PCIe)
//   BM_CudaPagesToDevice/<bytes>/<path> and BM_CudaH2DFloor/<bytes>: the load-back direction
//
// Sizes: an SSM slot of Qwen3-Next-80B at TP4 (≈ 18 MiB, cache-semantics.md §9) and 1 MiB;
// KV pages of 64 KiB, 256 KiB and 1 MiB. Without a usable device each benchmark is skipped with
// the reason.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>

#include "actors/forward_stream/tier_copier.hpp"
#include "gpu/cuda_copy_floor.hpp"
#include "gpu/cuda_l1_pool.hpp"
#include "gpu/device_probe.hpp"

namespace {

using namespace hc;

bool skip_without_device(benchmark::State& st) {
  const gpu::device_probe_result r = gpu::probe_devices();
  if (r.device_count > 0) return false;
  st.SkipWithError(
      (r.built_with_cuda ? "no usable CUDA device: " + r.reason : "built without CUDA").c_str());
  return true;
}

std::unique_ptr<l1_pool> slot_pool(benchmark::State& st, std::size_t slots, std::size_t bytes) {
  auto p = make_cuda_l1_pool({0, 0, 0, slots, bytes});
  if (!p) {
    st.SkipWithError(p.err().message.c_str());
    return nullptr;
  }
  return std::move(*p);
}

template <class Op>
void floor_loop(benchmark::State& st, std::size_t bytes, Op op) {
  if (skip_without_device(st)) return;
  auto f = cuda_copy_floor::create(0, bytes);
  if (!f) return st.SkipWithError(f.err().message.c_str());
  for (auto _ : st)
    if (!op(**f)) return st.SkipWithError("copy failed");
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * bytes));
}

void BM_CudaSlotCopy(benchmark::State& st) {
  if (skip_without_device(st)) return;
  const auto bytes = static_cast<std::size_t>(st.range(0));
  auto p = slot_pool(st, 9, bytes);
  if (!p) return;
  const slot_copy copies[] = {{1, 2}, {3, 4}, {5, 6}, {7, 8}};
  for (auto _ : st) {
    if (p->copy_slots(copies) != 0 || !p->synchronize()) return st.SkipWithError("copy failed");
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * 4 * bytes));
}

void BM_CudaD2DFloor(benchmark::State& st) {
  floor_loop(st, 4 * static_cast<std::size_t>(st.range(0)),
             [](cuda_copy_floor& f) { return f.device_to_device().ok(); });
}

void BM_CudaSlotClear(benchmark::State& st) {
  if (skip_without_device(st)) return;
  const auto bytes = static_cast<std::size_t>(st.range(0));
  auto p = slot_pool(st, 9, bytes);
  if (!p) return;
  const slot_id clears[] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (auto _ : st) {
    if (p->clear_slots(clears) != 0 || !p->synchronize()) return st.SkipWithError("clear failed");
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * 8 * bytes));
}

void BM_CudaMemsetFloor(benchmark::State& st) {
  floor_loop(st, 8 * static_cast<std::size_t>(st.range(0)),
             [](cuda_copy_floor& f) { return f.device_memset().ok(); });
}

constexpr std::size_t pages_per_copy = 64;

/// 64 device pages to / from 64 scattered host pages of a pinned L2 (page size 1 token of
/// `bytes`, so every page is its own run, as scattered backups are).
void pages(benchmark::State& st, tier_copy::direction dir) {
  if (skip_without_device(st)) return;
  const auto bytes = static_cast<std::size_t>(st.range(0));
  cuda_pool_shape shape{0, 2 * pages_per_copy, bytes, 0, 0};
  shape.tier_copies = static_cast<tier_copy_path>(st.range(1));
  auto dev = make_cuda_l1_pool(shape);
  if (!dev) return st.SkipWithError(dev.err().message.c_str());
  host_pool_sizes sizes;
  sizes.kv_tokens = 4 * pages_per_copy;
  sizes.kv_bytes_per_token = bytes;
  host_pools host(sizes, 1);
  auto pinned = (*dev)->pin_host(host.kv_region());
  if (!pinned) return st.SkipWithError(pinned.err().message.c_str());
  tier_copy c;
  c.dir = dir;
  std::vector<kv_index> host_ids(2 * pages_per_copy);
  std::iota(host_ids.begin(), host_ids.end(), 1);
  std::shuffle(host_ids.begin(), host_ids.end(), std::mt19937(7));
  for (std::size_t i = 0; i < pages_per_copy; ++i) {
    c.device_kv.push_back(static_cast<kv_index>(1 + i));
    c.host_kv.push_back(host_ids[i]);
  }
  for (auto _ : st) {
    if (run_tier_copy(**dev, host, c) != pages_per_copy * bytes) return st.SkipWithError("copy");
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * pages_per_copy * bytes));
}

void BM_CudaPagesToHost(benchmark::State& st) {
  pages(st, tier_copy::direction::device_to_host);
}
void BM_CudaPagesToDevice(benchmark::State& st) {
  pages(st, tier_copy::direction::host_to_device);
}

void BM_CudaD2HFloor(benchmark::State& st) {
  floor_loop(st, pages_per_copy * static_cast<std::size_t>(st.range(0)),
             [](cuda_copy_floor& f) { return f.device_to_host().ok(); });
}
void BM_CudaH2DFloor(benchmark::State& st) {
  floor_loop(st, pages_per_copy * static_cast<std::size_t>(st.range(0)),
             [](cuda_copy_floor& f) { return f.host_to_device().ok(); });
}

constexpr std::int64_t slot_18mib = 18 << 20;
BENCHMARK(BM_CudaSlotCopy)->Arg(1 << 20)->Arg(slot_18mib)->UseRealTime();
BENCHMARK(BM_CudaD2DFloor)->Arg(1 << 20)->Arg(slot_18mib)->UseRealTime();
BENCHMARK(BM_CudaSlotClear)->Arg(1 << 20)->Arg(slot_18mib)->UseRealTime();
BENCHMARK(BM_CudaMemsetFloor)->Arg(1 << 20)->Arg(slot_18mib)->UseRealTime();
// path: 0 = automatic, 1 = kernel, 2 = copy engine (gpu/cuda_l1_pool.hpp tier_copy_path)
BENCHMARK(BM_CudaPagesToHost)
    ->ArgNames({"bytes", "path"})
    ->ArgsProduct({{64 << 10, 256 << 10, 1 << 20}, {0, 1, 2}})
    ->UseRealTime();
BENCHMARK(BM_CudaD2HFloor)->Arg(64 << 10)->Arg(256 << 10)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_CudaPagesToDevice)
    ->ArgNames({"bytes", "path"})
    ->ArgsProduct({{64 << 10, 256 << 10, 1 << 20}, {0, 1, 2}})
    ->UseRealTime();
BENCHMARK(BM_CudaH2DFloor)->Arg(64 << 10)->Arg(256 << 10)->Arg(1 << 20)->UseRealTime();

}  // namespace
