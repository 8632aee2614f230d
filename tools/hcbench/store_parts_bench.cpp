// hcbench: what planning a Store batch costs the client before anything moves
// (client_store::set_from / get_into: schema/store_parts.hpp's check, then split).
//
//   BM_StorePartsPlan/values:N/segments:S/reused:R   check + split of N values of S segments
//                        of 4 KiB each, laid out one after another in the arena (R = 0: the
//                        SGLang backend's layout — one segment a value for page_first, two
//                        per layer for layer_first) or every value at arena offset 0 (R = 1:
//                        one value a part). No part size limit. Time per batch.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "schema/store_parts.hpp"

namespace {

using namespace hc;

void BM_StorePartsPlan(benchmark::State& state) {
  const auto values = static_cast<std::size_t>(state.range(0));
  const auto segments = static_cast<std::size_t>(state.range(1));
  const bool reused = state.range(2) != 0;
  constexpr std::uint64_t segment_bytes = 4096;
  std::vector<store_entry> entries(values);
  std::uint64_t at = 0;
  for (std::size_t i = 0; i < values; ++i) {
    entries[i].key = "page-" + std::to_string(i);
    if (reused) at = 0;
    for (std::size_t k = 0; k < segments; ++k, at += segment_bytes)
      entries[i].segments.push_back({at, segment_bytes});
  }
  const std::vector<std::uintptr_t> addresses(values * segments, 4096);  // never read
  std::size_t parts = 0;
  for (auto _ : state) {
    if (!store_parts::check(entries, addresses, UINT64_MAX).ok()) {
      state.SkipWithError("check refused the batch");
      return;
    }
    parts = store_parts::split(entries, 0).size();
    benchmark::DoNotOptimize(parts);
  }
  state.counters["parts"] = static_cast<double>(parts);
}

}  // namespace

BENCHMARK(BM_StorePartsPlan)
    ->ArgNames({"values", "segments", "reused"})
    ->Args({128, 1, 0})
    ->Args({128, 2, 0})
    ->Args({128, 128, 0})
    ->Args({262144, 2, 0})
    ->Args({128, 1, 1})
    ->Args({4096, 1, 1})
    ->Unit(benchmark::kMicrosecond);
