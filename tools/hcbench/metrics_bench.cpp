// hcbench: what the node's metrics cost a step (monitoring/prometheus_metrics): the series a
// step of N requests updates on the instance's actor and the RPC thread — a match's three
// counters per request, the instance's eight pool gauges, the RPC's latency histogram.
//
//   BM_StepMetrics/<requests>   those updates for one step (time per step)
#include <benchmark/benchmark.h>

#include "monitoring/prometheus_metrics.hpp"

namespace {

using namespace hc;

void BM_StepMetrics(benchmark::State& state) {
  const auto requests = state.range(0);
  prometheus_metrics m;
  pool_gauges g;
  g.kv_capacity = 1 << 20;
  g.slot_capacity = 1024;
  std::uint64_t step = 0;
  for (auto _ : state) {
    for (std::int64_t r = 0; r < requests; ++r)
      m.l1_match(4096, 4000);
    g.kv_used = ++step;
    m.pools(1, g);
    m.rpc("step", 1e-4);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_StepMetrics)->Arg(1)->Arg(8)->Arg(32)->Unit(benchmark::kMicrosecond);

}  // namespace
