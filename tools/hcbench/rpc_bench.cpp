// RPC benchmarks (issue 4): one scheduling step of N requests (create + match + admit +
// KV, then cache_finished) over one `step` RPC vs the same commands in process, and the
// raw Cap'n Proto round trip (`ping`, answered on the RPC thread without the actors),
// over a Unix socket and over TCP, measured side by side in one run against an
// in-process hybridcached.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "actors/node/node.hpp"
#include "actors/scheduler/command_executor.hpp"
#include "schema/client.hpp"
#include "schema/rpc_server.hpp"

namespace {

using namespace hc;

constexpr const char* kToken = "hcbench-shared-secret-0123456789";

struct bench_node {
  null_metrics metrics;
  node n{node_config{}};
  rpc_server server{n, metrics};
  std::string socket =
      (std::filesystem::temp_directory_path() / ("hcbench-" + std::to_string(::getpid()) + ".sock"))
          .string();
  bench_node() {
    rpc_server_config rc;
    rc.unix_path = socket;
    rc.tcp_address = "127.0.0.1:0";
    rc.token = kToken;
    if (!server.start(rc).ok()) std::abort();
  }
  std::string address(bool tcp) const { return tcp ? server.tcp_address() : "unix:" + socket; }
};

// Created on first use, destroyed by rpc_bench_teardown() before main returns: an
// actor_system must not be destroyed by static destructors (CAF's globals die first).
std::unique_ptr<bench_node>& node_slot() {
  static std::unique_ptr<bench_node> bn;
  return bn;
}

bench_node& shared_node() {
  if (!node_slot()) node_slot() = std::make_unique<bench_node>();
  return *node_slot();
}

instance_spec bench_spec() {
  instance_spec s;
  s.model_id = "hcbench-" + std::to_string(::getpid());
  s.page_size = 1;
  s.kv_tokens = 1 << 20;
  s.ssm_slots = 1024;
  s.request_rows = 256;
  return s;
}

/// Step 1 (admission) and step 2 (finish) for requests [first, first + n): 512-token
/// prompts sharing a 256-token system prompt.
void build_steps(std::uint64_t first, int n, std::vector<command>& admit,
                 std::vector<command>& finish) {
  admit.clear();
  finish.clear();
  for (int i = 0; i < n; ++i) {
    const request_handle h = first + static_cast<std::uint64_t>(i);
    command c;
    c.req = h;
    c.kind = cmd_kind::create;
    c.tokens.resize(512);
    for (int t = 0; t < 512; ++t)
      c.tokens[static_cast<std::size_t>(t)] =
          t < 256 ? t + 1 : static_cast<token_id>(h * 1000 + static_cast<std::uint64_t>(t));
    admit.push_back(c);
    c.tokens.clear();
    c.kind = cmd_kind::match;
    admit.push_back(c);
    c.kind = cmd_kind::alloc_req;
    admit.push_back(c);
    finish.push_back(c);  // placeholder, replaced below
    finish.back().kind = cmd_kind::finish;
  }
}

/// Adds the KV allocation for each request once its prefix length is known.
void add_kv(const std::vector<command>& admit, const std::vector<command_result>& res,
            std::vector<command>& kv) {
  kv.clear();
  for (std::size_t i = 1; i < admit.size(); i += 3) {
    command c;
    c.kind = cmd_kind::alloc_kv;
    c.req = admit[i].req;
    c.start = res[i].prefix_len;
    c.n = 512 - res[i].prefix_len;
    kv.push_back(c);
  }
}

void BM_StepInProcess(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  instance_spec spec = bench_spec();
  radix_cache cache(cache_config_of(spec));
  request_manager m(request_config_of(spec), cache);
  std::vector<command> admit, finish, kv;
  std::vector<command_result> res;
  std::uint64_t next = 1;
  for (auto _ : state) {
    build_steps(next, n, admit, finish);
    next += static_cast<std::uint64_t>(n);
    execute_batch(m, cache, admit, res, nullptr);
    add_kv(admit, res, kv);
    execute_batch(m, cache, kv, res, nullptr);
    execute_batch(m, cache, finish, res, nullptr);
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_StepRpc(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool tcp = state.range(1) != 0;
  auto c = client::connect(shared_node().address(tcp), tcp ? kToken : "");
  if (!c) return state.SkipWithError(c.err().message.c_str());
  auto s = (*c)->open(bench_spec());
  if (!s) return state.SkipWithError(s.err().message.c_str());
  std::vector<command> admit, finish, kv;
  std::uint64_t next = 1;
  for (auto _ : state) {
    build_steps(next, n, admit, finish);
    next += static_cast<std::uint64_t>(n);
    auto r = (*s)->step(admit);
    add_kv(admit, *r, kv);
    kv.insert(kv.end(), finish.begin(), finish.end());  // KV + finish in the second step
    (void)(*s)->step(kv);
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_RawRoundTrip(benchmark::State& state) {
  const bool tcp = state.range(0) != 0;
  auto c = client::connect(shared_node().address(tcp), tcp ? kToken : "");
  if (!c) return state.SkipWithError(c.err().message.c_str());
  for (auto _ : state)
    benchmark::DoNotOptimize((*c)->ping());
}

void BM_SmallStepRpc(benchmark::State& state) {
  const bool tcp = state.range(0) != 0;
  auto c = client::connect(shared_node().address(tcp), tcp ? kToken : "");
  if (!c) return state.SkipWithError(c.err().message.c_str());
  auto s = (*c)->open(bench_spec());
  if (!s) return state.SkipWithError(s.err().message.c_str());
  std::vector<command> one(1);
  one[0].kind = cmd_kind::evict;  // evict(0, 0): a small call through the actors
  for (auto _ : state)
    benchmark::DoNotOptimize((*s)->step(one));
}

BENCHMARK(BM_StepInProcess)->ArgName("reqs")->Arg(8)->Arg(32)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StepRpc)
    ->ArgNames({"reqs", "tcp"})
    ->ArgsProduct({{8, 32}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RawRoundTrip)->ArgName("tcp")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SmallStepRpc)->ArgName("tcp")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

void rpc_bench_teardown() {
  node_slot().reset();
}
