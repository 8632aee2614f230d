// RPC benchmarks (issue 4): one scheduling step of N requests (create + match + admit +
// KV, then cache_finished) over one `step` RPC vs the same commands in process, the raw
// Cap'n Proto round trip (`ping`, answered on the RPC thread without the actors), and a
// small call through the actors, sequential and pipelined (a window of calls in
// flight), over a Unix socket and over TCP, measured side by side in one run; a forward's
// two fences; and the external L3 store's calls (SGLang's HiCache backend: batch exists,
// get, set of pages).
//
// The node is in this process by default. To measure a separate hybridcached process
// (scripts/bench-rpc.sh does this), set
//   HC_BENCH_NODE=unix:/path/to.sock  HC_BENCH_NODE_TCP=127.0.0.1:PORT  HC_BENCH_TOKEN=SECRET
#include <benchmark/benchmark.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "actors/node/node.hpp"
#include "actors/scheduler/command_executor.hpp"
#include "actors/scheduler/instance_config.hpp"
#include "gpu/shm_region.hpp"
#include "schema/client.hpp"
#include "schema/rpc_probe.hpp"
#include "schema/server/rpc_server.hpp"
#include "storage/memory_store.hpp"
#include "tools/hcbench/call_latencies.hpp"

namespace {

using namespace hc;

constexpr const char* kToken = "hcbench-shared-secret-0123456789";

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

node_config with_l3() {
  node_config c;
  c.l3 = std::make_shared<memory_store>(std::size_t{256} << 20);  // the Store benchmarks'
  return c;
}

struct bench_node {
  null_metrics metrics;
  node n{with_l3()};
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

// Sequential round trips on this class of VM are bimodal (floors.md: same vs cross vCPU), so
// the mean Google Benchmark reports is dominated by the millisecond tail; the p50_us / p99_us
// counters are what to compare.
using latencies = bench::call_latencies;

/// Where the RPC benchmarks connect: the external node when HC_BENCH_NODE is set.
std::string node_address(bool tcp) {
  if (env("HC_BENCH_NODE")) {
    if (!tcp) return env("HC_BENCH_NODE");
    return env("HC_BENCH_NODE_TCP") ? env("HC_BENCH_NODE_TCP") : "";
  }
  return shared_node().address(tcp);
}
std::string node_token(bool tcp) {
  if (!tcp) return "";
  return env("HC_BENCH_NODE") ? (env("HC_BENCH_TOKEN") ? env("HC_BENCH_TOKEN") : "") : kToken;
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
    cmd::create c{h, 0, std::vector<token_id>(512), {}};
    for (int t = 0; t < 512; ++t)
      c.tokens[static_cast<std::size_t>(t)] =
          t < 256 ? t + 1 : static_cast<token_id>(h * 1000 + static_cast<std::uint64_t>(t));
    admit.emplace_back(std::move(c));
    admit.emplace_back(cmd::match{h});
    admit.emplace_back(cmd::alloc_req{h});
    finish.emplace_back(cmd::finish{h, 0});
  }
}

/// Adds the KV allocation for each request once its prefix length is known.
void add_kv(const std::vector<command>& admit, const std::vector<command_result>& res,
            std::vector<command>& kv) {
  kv.clear();
  for (std::size_t i = 1; i < admit.size(); i += 3) {
    const std::uint64_t prefix = res[i].as<res::match>().prefix_len;
    kv.emplace_back(cmd::alloc_kv{std::get<cmd::match>(admit[i]).req, prefix, 512 - prefix});
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
  latencies lat(state);
  for (auto _ : state) {
    build_steps(next, n, admit, finish);
    next += static_cast<std::uint64_t>(n);
    lat.time([&] {
      execute_batch(m, cache, admit, res, nullptr);
      add_kv(admit, res, kv);
      execute_batch(m, cache, kv, res, nullptr);
      execute_batch(m, cache, finish, res, nullptr);
    });
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_StepRpc(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool tcp = state.range(1) != 0;
  auto c = client::connect(node_address(tcp), node_token(tcp));
  if (!c) return state.SkipWithError(c.err().message.c_str());
  auto s = (*c)->open(bench_spec());
  if (!s) return state.SkipWithError(s.err().message.c_str());
  std::vector<command> admit, finish, kv;
  std::uint64_t next = 1;
  latencies lat(state);
  for (auto _ : state) {
    build_steps(next, n, admit, finish);
    next += static_cast<std::uint64_t>(n);
    lat.time([&] {
      auto r = (*s)->step(admit);
      add_kv(admit, *r, kv);
      kv.insert(kv.end(), finish.begin(), finish.end());  // KV + finish in the second step
      (void)(*s)->step(kv);
    });
  }
  state.SetItemsProcessed(state.iterations() * n);
}

/// One scheduler iteration per RPC, as SGLang's loop runs them: the finish of batch k-1 and
/// the admission of batch k (create + match + alloc_req + the KV of the rest of each
/// request, alloc_kv to_end) in one step. With `shared`, the session's rows are in shared
/// memory and the results carry no index lists. Either way the worker ends with each
/// request's row in its own memory (copied out of the results, or out of the shared row),
/// as SGLang's req_to_token needs it. With `by_reference` (needs `shared`) the prompts go
/// through the session's token arena too: the worker writes them there (timed, as the
/// lists' encoding is) and the creates carry ranges.
struct iteration {
  explicit iteration(int requests, bool shared_rows, bool prompts_by_reference = false)
      : n(requests), shared(shared_rows), by_reference(prompts_by_reference) {
    spec = bench_spec();
    spec.max_context_len = 1024;
    spec.shared_rows = shared;
    spec.shared_tokens = by_reference ? static_cast<std::size_t>(n) * 512 : 0;
    local.resize(static_cast<std::size_t>(n) * 512);
  }
  /// by_reference: moves each create's prompt out of `cmds` into `prompts` and gives the
  /// create its range of the arena instead (prompt i at i * 512).
  void to_ranges(std::vector<command>& cmds) {
    prompts.clear();
    for (command& c : cmds)
      if (auto* x = std::get_if<cmd::create>(&c)) {
        x->shared = cmd::token_range{prompts.size() * 512, x->tokens.size()};
        prompts.push_back(std::move(x->tokens));
        x->tokens.clear();
      }
  }
  /// Writes the prompts of to_ranges into the arena.
  void write_prompts(token_id* arena) const {
    for (std::size_t i = 0; i < prompts.size(); ++i)
      std::copy(prompts[i].begin(), prompts[i].end(), arena + i * 512);
  }
  /// The commands of the next iteration into `cmds`.
  void next(std::vector<command>& cmds) {
    cmds.clear();
    for (request_handle h : running)
      cmds.emplace_back(cmd::finish{h, 0});
    running.clear();
    build_steps(first, n, admit, finish);
    for (std::size_t i = 0; i < admit.size(); i += 3) {
      const request_handle h = std::get<cmd::create>(admit[i]).req;
      cmds.push_back(admit[i]);
      cmds.push_back(admit[i + 1]);
      cmds.push_back(admit[i + 2]);
      cmds.emplace_back(cmd::alloc_kv{h, 0, 0, true});
      running.push_back(h);
    }
    first += static_cast<std::uint64_t>(n);
  }
  /// The worker's copy of each admitted request's row (512 ids).
  void read_rows(const std::vector<command_result>& res, const kv_index* rows) {
    std::size_t r = res.size() - static_cast<std::size_t>(n) * 4;
    for (int i = 0; i < n; ++i, r += 4) {
      kv_index* out = local.data() + static_cast<std::size_t>(i) * 512;
      if (rows) {
        const row_id row = res[r + 2].as<res::alloc_req>().row;
        std::copy_n(rows + static_cast<std::size_t>(row) * spec.max_context_len, 512, out);
      } else {
        const auto& pre = res[r + 1].as<res::match>().indices;
        const auto& ext = res[r + 3].as<res::alloc_kv>().indices;
        std::copy(ext.begin(), ext.end(), std::copy(pre.begin(), pre.end(), out));
      }
    }
    benchmark::DoNotOptimize(local.data());
  }
  int n;
  bool shared;
  bool by_reference;
  std::vector<std::vector<token_id>> prompts;
  instance_spec spec;
  std::uint64_t first = 1;
  std::vector<request_handle> running;
  std::vector<command> admit, finish;
  std::vector<kv_index> local;
};

void BM_IterationInProcess(benchmark::State& state) {
  iteration it(static_cast<int>(state.range(0)), state.range(1) != 0);
  radix_cache cache(cache_config_of(it.spec));
  request_config rc = request_config_of(it.spec);
  std::vector<kv_index> rows(it.shared ? shared_rows_bytes(it.spec) / sizeof(kv_index) : 0);
  rc.shared_rows = rows;
  request_manager m(rc, cache);
  std::vector<command> cmds;
  std::vector<command_result> res;
  latencies lat(state);
  for (auto _ : state) {
    it.next(cmds);
    lat.time([&] {
      execute_batch(m, cache, cmds, res, nullptr);
      it.read_rows(res, it.shared ? rows.data() : nullptr);
    });
  }
  state.SetItemsProcessed(state.iterations() * it.n);
}

void BM_IterationRpc(benchmark::State& state) {
  // shared: 0 = lists, 1 = shared rows, 2 = shared rows and prompts through the token arena.
  iteration it(static_cast<int>(state.range(0)), state.range(2) != 0, state.range(2) == 2);
  const bool tcp = state.range(1) != 0;
  auto c = client::connect(node_address(tcp), node_token(tcp));
  if (!c) return state.SkipWithError(c.err().message.c_str());
  auto s = (*c)->open(it.spec);
  if (!s) return state.SkipWithError(s.err().message.c_str());
  result<shm_region> rows = shm_region{};
  if (it.shared) {
    rows = shm_region::map((*s)->pools().rows_shm, (*s)->pools().rows_bytes);
    if (!rows) return state.SkipWithError(rows.err().message.c_str());
  }
  const kv_index* row_ids =
      it.shared ? reinterpret_cast<const kv_index*>(rows->bytes().data()) : nullptr;
  result<shm_region> arena = shm_region{};
  if (it.by_reference) {
    arena = shm_region::map((*s)->pools().tokens_shm, (*s)->pools().tokens_bytes);
    if (!arena) return state.SkipWithError(arena.err().message.c_str());
  }
  auto* arena_tokens = reinterpret_cast<token_id*>(arena->bytes().data());
  std::vector<command> cmds;
  latencies lat(state);
  for (auto _ : state) {
    it.next(cmds);
    if (it.by_reference) it.to_ranges(cmds);
    lat.time([&] {
      if (it.by_reference) it.write_prompts(arena_tokens);
      auto r = (*s)->step(cmds);
      if (r) it.read_rows(*r, row_ids);
    });
  }
  state.SetItemsProcessed(state.iterations() * it.n);
}

void BM_RawRoundTrip(benchmark::State& state) {
  const bool tcp = state.range(0) != 0;
  auto c = client::connect(node_address(tcp), node_token(tcp));
  if (!c) return state.SkipWithError(c.err().message.c_str());
  latencies lat(state);
  for (auto _ : state)
    lat.time([&] { benchmark::DoNotOptimize((*c)->ping()); });
}

void BM_SmallStepRpc(benchmark::State& state) {
  const bool tcp = state.range(0) != 0;
  auto c = client::connect(node_address(tcp), node_token(tcp));
  if (!c) return state.SkipWithError(c.err().message.c_str());
  auto s = (*c)->open(bench_spec());
  if (!s) return state.SkipWithError(s.err().message.c_str());
  const std::vector<command> one{cmd::evict{0, 0}};  // a small call through the actors
  latencies lat(state);
  for (auto _ : state)
    lat.time([&] { benchmark::DoNotOptimize((*s)->step(one)); });
}

/// A forward pass's two fences (beginForward, endForward) with nothing queued before them:
/// what a worker's every forward costs besides its step.
void BM_FenceRpc(benchmark::State& state) {
  auto c = client::connect(node_address(false));
  if (!c) return state.SkipWithError(c.err().message.c_str());
  auto s = (*c)->open(bench_spec());
  if (!s) return state.SkipWithError(s.err().message.c_str());
  std::uint64_t batch = 0;
  bool ok = true;
  latencies lat(state);
  for (auto _ : state) {
    ++batch;
    lat.time([&] { ok = (*s)->begin_forward(batch).ok() && (*s)->end_forward(batch).ok(); });
    if (!ok) return state.SkipWithError("a fence failed");
  }
}

/// An external client's L3 batch of `keys` pages of `bytes` each (SGLang's HiCache
/// storage backend: page keys are hex SHA-256 digests): op 0 = exists of pages that are
/// all present, 1 = get of them, 2 = set of them (idempotent: they exist already).
void BM_StoreRpc(benchmark::State& state) {
  const int op = static_cast<int>(state.range(0));
  const auto keys = static_cast<std::size_t>(state.range(1));
  const auto bytes = static_cast<std::uint64_t>(state.range(2));
  auto c = client::connect(node_address(false));
  if (!c) return state.SkipWithError(c.err().message.c_str());
  auto st = (*c)->open_store("hcbench-" + std::to_string(::getpid()));
  if (!st) return state.SkipWithError(st.err().message.c_str());
  if ((*st)->arena().size() < keys * bytes) return state.SkipWithError("arena too small");
  std::vector<std::string> names;
  std::vector<store_entry> entries;
  for (std::size_t i = 0; i < keys; ++i) {
    std::string k(64, '0');
    const std::string n = std::to_string(i + 1);
    k.replace(k.size() - n.size(), n.size(), n);
    names.push_back(k);
    entries.push_back({k, {{i * bytes, bytes}}});
  }
  std::fill((*st)->arena().begin(), (*st)->arena().end(), std::byte{7});
  auto put = (*st)->set(store_pool::kv_page, entries);
  if (!put || std::count(put->begin(), put->end(), true) != static_cast<long>(keys))
    return state.SkipWithError("the values could not be stored");
  bool ok = true;
  latencies lat(state);
  for (auto _ : state) {
    lat.time([&] {
      if (op == 0) {
        auto r = (*st)->exists(names);
        ok = r && r->kv_hit_pages == keys;
      } else {
        auto r = op == 1 ? (*st)->get(store_pool::kv_page, entries)
                         : (*st)->set(store_pool::kv_page, entries);
        ok = r && std::count(r->begin(), r->end(), true) == static_cast<long>(keys);
      }
    });
    if (!ok) return state.SkipWithError("a store call failed or missed");
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(keys));
  (void)(*st)->clear();
}

/// A router's or a scheduling policy's step: `lookups` lookups (no request) of cached
/// prompts of `ctx` tokens each, with their KV ids in the answer or without
/// (`Lookup.withoutIndices`), the prompts sent as lists or named in the session's token
/// arena (`shared`; written there once, as a policy that looks a waiting prompt up step
/// after step would) — issue 19's "results that carry what the worker needs".
void BM_LookupRpc(benchmark::State& state) {
  const auto ctx = static_cast<std::size_t>(state.range(0));
  const auto lookups = static_cast<std::size_t>(state.range(1));
  const bool without = state.range(2) != 0;
  const bool shared = state.range(3) != 0;
  auto c = client::connect(node_address(false));
  if (!c) return state.SkipWithError(c.err().message.c_str());
  instance_spec spec = bench_spec();
  spec.model_id += "-lookup";
  spec.strat = strategy::no_buffer;  // finish caches the whole prompt
  spec.overlap = false;
  spec.shared_tokens = shared ? lookups * ctx : 0;
  auto s = (*c)->open(spec);
  if (!s) return state.SkipWithError(s.err().message.c_str());
  std::optional<shm_region> arena;
  if (shared) {
    auto a = shm_region::map((*s)->pools().tokens_shm, (*s)->pools().tokens_bytes);
    if (!a) return state.SkipWithError(a.err().message.c_str());
    arena = std::move(*a);
  }
  std::vector<command> look;
  for (std::size_t i = 0; i < lookups; ++i) {
    std::vector<token_id> prompt(ctx);
    for (std::size_t t = 0; t < ctx; ++t)  // a shared 1 K-token system prompt, then its own
      prompt[t] = static_cast<token_id>(t < 1024 ? t + 1 : (i + 1) * 1'000'000 + t);
    const request_handle h = 1 + i;
    const std::vector<command> cache_it{
        cmd::create{h, 0, prompt, {}},           cmd::match{h},    cmd::lock{h}, cmd::alloc_req{h},
        cmd::alloc_kv{h, 0, 0, /*to_end=*/true}, cmd::finish{h, 0}};
    auto put = (*s)->step(cache_it);
    if (!put) return state.SkipWithError(put.err().message.c_str());
    for (const command_result& r : *put)
      if (!r.ok()) return state.SkipWithError(r.error.c_str());
    if (arena) {
      std::memcpy(arena->bytes().data() + i * ctx * sizeof(token_id), prompt.data(),
                  ctx * sizeof(token_id));
      look.emplace_back(cmd::lookup{0, {}, without, cmd::token_range{i * ctx, ctx}});
    } else {
      look.emplace_back(cmd::lookup{0, std::move(prompt), without, {}});
    }
  }
  latencies lat(state);
  bool ok = true;
  for (auto _ : state) {
    lat.time([&] {
      auto r = (*s)->step(look);
      ok = r && r->back().ok() && r->back().as<res::lookup>().prefix_len == ctx;
    });
    if (!ok) return state.SkipWithError("a lookup failed or missed");
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(lookups));
}

/// The machine's floor: a 64-byte blocking ping-pong over a Unix socket pair with a forked
/// echo process (floors.md §1), so every RPC figure has its OS round trip beside it.
void BM_SocketPingPong(benchmark::State& state) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return state.SkipWithError("socketpair");
  const pid_t child = ::fork();
  if (child < 0) return state.SkipWithError("fork");
  if (child == 0) {
    ::close(sv[0]);
    char b[64];
    while (::read(sv[1], b, sizeof b) == static_cast<ssize_t>(sizeof b))
      if (::write(sv[1], b, sizeof b) != static_cast<ssize_t>(sizeof b)) break;
    ::_exit(0);
  }
  ::close(sv[1]);
  char b[64] = {};
  bool ok = true;
  {
    latencies lat(state);
    for (auto _ : state) {
      lat.time([&] {
        ok = ::write(sv[0], b, sizeof b) == static_cast<ssize_t>(sizeof b) &&
             ::read(sv[0], b, sizeof b) == static_cast<ssize_t>(sizeof b);
      });
      if (!ok) break;
    }
  }
  ::close(sv[0]);
  ::waitpid(child, nullptr, 0);
  if (!ok) state.SkipWithError("echo process failed");
}

/// Keeps `window` calls in flight: each iteration waits for the oldest and sends one.
void pipelined(benchmark::State& state, rpc_probe::call kind) {
  const bool tcp = state.range(0) != 0;
  auto p = rpc_probe::connect(node_address(tcp), node_token(tcp));
  if (!p) return state.SkipWithError(p.err().message.c_str());
  if (kind == rpc_probe::call::small_step)
    if (status s = (*p)->open(bench_spec()); !s)
      return state.SkipWithError(s.err().message.c_str());
  if (status s = (*p)->start(kind, static_cast<std::size_t>(state.range(1))); !s)
    return state.SkipWithError(s.err().message.c_str());
  for (auto _ : state)
    if (status s = (*p)->complete_one(); !s) return state.SkipWithError(s.err().message.c_str());
  (void)(*p)->drain();
  state.SetItemsProcessed(state.iterations());
}

void BM_PipelinedRawRoundTrip(benchmark::State& state) {
  pipelined(state, rpc_probe::call::ping);
}
void BM_PipelinedSmallStepRpc(benchmark::State& state) {
  pipelined(state, rpc_probe::call::small_step);
}

BENCHMARK(BM_StepInProcess)->ArgName("reqs")->Arg(8)->Arg(32)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StepRpc)
    ->ArgNames({"reqs", "tcp"})
    ->ArgsProduct({{8, 32}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_IterationInProcess)
    ->ArgNames({"reqs", "shared"})
    ->ArgsProduct({{8, 32}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_IterationRpc)
    ->ArgNames({"reqs", "tcp", "shared"})
    ->ArgsProduct({{8, 32}, {0, 1}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RawRoundTrip)->ArgName("tcp")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SmallStepRpc)->ArgName("tcp")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SocketPingPong)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FenceRpc)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StoreRpc)
    ->ArgNames({"op", "keys", "bytes"})
    ->Args({0, 16, 4096})
    ->Args({0, 128, 4096})
    ->Args({1, 16, 4096})
    ->Args({1, 16, 65536})
    ->Args({2, 16, 65536})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LookupRpc)
    ->ArgNames({"ctx", "lookups", "without_indices", "shared"})
    ->ArgsProduct({{4096, 65536}, {8}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PipelinedRawRoundTrip)
    ->ArgNames({"tcp", "window"})
    ->ArgsProduct({{0, 1}, {16}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PipelinedSmallStepRpc)
    ->ArgNames({"tcp", "window"})
    ->ArgsProduct({{0, 1}, {16}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

void rpc_bench_teardown() {
  node_slot().reset();
}
