// hcbench: Google Benchmark suite of the index plane.
//
//   BM_MatchPrefix / BM_Insert   contexts 1K..64K tokens, page 1 and 64, trees of 100 and
//                                1,000 conversations (shared system prompt ctx/8, 4 groups,
//                                like reference/sglang-baseline.md)
//   BM_MatchFloor / BM_InsertFloor  the memory floor of the same call on the same data, run
//                                right after it: a match must read the query and the
//                                tree's key (memcmp) and write the prefix's ids (memcpy
//                                into a buffer allocated once); an insert compares the
//                                cached prefix and copies the new tail's key and ids
//   BM_InsertLocked              BM_Insert as a request makes it (cache_unfinished, finish):
//                                its match locked, the locked node given as known_prefix
//   BM_EvictMamba / BM_EvictPage evict(mamba_num=1) and evict(num_tokens=page)
//   BM_DecodeStep                a decode step's KV allocation: radix_cache::alloc_kv of one
//                                token onto a request's row of ctx tokens (the row as a match
//                                leaves it: exactly its prefix's capacity), 1,024 steps a
//                                request, then its ids are freed (untimed) and a new one starts
//   BM_TraceReplay               whole SGLang traces (tests/data, or $HC_TRACE_DIR)
//
// Only the cache call is timed (manual time); building keys and values is not. Besides the
// mean (Google Benchmark's time column), the tree benchmarks report each call's median and
// p99 as the counters p50_us / p99_us: SGLang's baseline figures are per-call medians, and a
// mean here also carries the rare call that takes a page fault as the heap grows.
// Run: build/release/tools/hcbench/hcbench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "actors/radix_cache/radix_cache.hpp"
#include "cli/standard_streams.hpp"
#include "tools/hcbench/call_latencies.hpp"
#include "tools/replay/replayer.hpp"

namespace {

using namespace hc;
using clk = std::chrono::steady_clock;

/// A tree holding `convs` conversations of `ctx` tokens (ctx/8 shared system prompt in 4
/// groups), each conversation ending in a node holding a slot.
struct bench_tree {
  std::size_t ctx, convs, page;
  std::unique_ptr<radix_cache> cache;
  std::vector<std::vector<token_id>> keys;
  std::mt19937_64 rng{42};
  int next_token = 1 << 24;

  bench_tree(std::size_t ctx_, std::size_t convs_, std::size_t page_)
      : ctx(ctx_), convs(convs_), page(page_) {
    // Room for the tree plus the inserts a benchmark run makes.
    const std::size_t kv = (ctx * convs * 2 + (1u << 22)) / page * page;
    cache = std::make_unique<radix_cache>(cache_config{kv, page, convs * 4 + 4096, 64});
    for (std::size_t c = 0; c < convs; ++c) {
      std::vector<token_id> k(ctx);
      const std::size_t sys = ctx / 8;
      for (std::size_t i = 0; i < ctx; ++i)
        k[i] = i < sys ? static_cast<token_id>(1 + (c % 4) * 1000003 + i)
                       : static_cast<token_id>(1 + (rng() % 150000));
      insert_fresh(k);
      keys.push_back(std::move(k));
    }
  }
  /// The floor benchmarks' copy of what the tree holds: per conversation its key and the
  /// ids a match returns, in buffers of their own (same footprint, nothing shared).
  struct floor_data {
    std::vector<std::vector<token_id>> keys;
    std::vector<std::vector<kv_index>> ids;
    std::vector<kv_index> out;  // the destination, allocated once
  };
  std::unique_ptr<floor_data> floor;
  /// BM_Insert's calls in order: the conversation and the cached prefix it compared (the
  /// conversations grow by a turn per insert), replayed by BM_InsertFloor.
  std::vector<std::pair<std::size_t, std::size_t>> insert_log;
  floor_data& floor_copy() {
    if (floor) return *floor;
    floor = std::make_unique<floor_data>();
    std::size_t longest = 0;
    for (const auto& k : keys) {
      floor->keys.push_back(k);
      floor->ids.push_back(cache->tree().match(0, k).indices);
      longest = std::max(longest, k.size());
    }
    floor->out.resize(longest + 4096);
    return *floor;
  }
  void insert_fresh(const std::vector<token_id>& k) {
    std::vector<kv_index> v;
    if (!cache->kv().alloc_extend(0, 0, k.size(), v)) std::abort();
    auto r = cache->tree().insert(0, k, v, cache->slots().alloc_one());
    if (!r.ok() || r->mamba_exist) std::abort();
  }
};

bench_tree& tree_for(std::size_t ctx, std::size_t convs, std::size_t page) {
  static std::unique_ptr<bench_tree> t;
  if (!t || t->ctx != ctx || t->convs != convs || t->page != page) {
    t.reset();
    t = std::make_unique<bench_tree>(ctx, convs, page);
  }
  return *t;
}

void BM_MatchPrefix(benchmark::State& st) {
  bench_tree& t =
      tree_for(static_cast<std::size_t>(st.range(0)), static_cast<std::size_t>(st.range(1)),
               static_cast<std::size_t>(st.range(2)));
  bench::call_latencies lat(st);
  std::size_t i = 0;
  for (auto _ : st) {
    const auto& key = t.keys[(i++ * 7919) % t.keys.size()];
    const auto t0 = clk::now();
    match_result m = t.cache->tree().match(0, key);
    lat.stop(t0);
    benchmark::DoNotOptimize(m.indices.data());
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()));
}

void BM_MatchFloor(benchmark::State& st) {
  bench_tree& t =
      tree_for(static_cast<std::size_t>(st.range(0)), static_cast<std::size_t>(st.range(1)),
               static_cast<std::size_t>(st.range(2)));
  bench_tree::floor_data& f = t.floor_copy();
  bench::call_latencies lat(st);
  std::size_t i = 0;
  for (auto _ : st) {
    const std::size_t c = (i++ * 7919) % t.keys.size();
    const auto& key = t.keys[c];
    const auto& ids = f.ids[c];
    const auto t0 = clk::now();
    int cmp = std::memcmp(key.data(), f.keys[c].data(), key.size() * sizeof(token_id));
    std::memcpy(f.out.data(), ids.data(), ids.size() * sizeof(kv_index));
    lat.stop(t0);
    benchmark::DoNotOptimize(cmp);
    benchmark::DoNotOptimize(f.out.data());
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()));
}

/// A finished turn: the conversation's cached prefix plus a new page-aligned tail of 256
/// tokens (prev_prefix_len = cached prefix, so the walk and the new leaf are timed).
/// `locked`: as a request inserts it (cache_unfinished, finish — SGLang's inserts come from
/// the same two calls): its match holds the lock on the prefix's node, which insert is given
/// as known_prefix (the lock and unlock are not timed).
void insert_turns(benchmark::State& st, bool locked) {
  bench_tree& t =
      tree_for(static_cast<std::size_t>(st.range(0)), static_cast<std::size_t>(st.range(1)),
               static_cast<std::size_t>(st.range(2)));
  const std::size_t tail = 256 / t.page * t.page == 0 ? t.page : 256 / t.page * t.page;
  radix_tree& tree = t.cache->tree();
  bench::call_latencies lat(st);
  std::size_t i = 0;
  for (auto _ : st) {
    const std::size_t c = (i++ * 7919) % t.keys.size();
    std::vector<token_id> key = t.keys[c];
    for (std::size_t j = 0; j < tail; ++j)
      key.push_back(t.next_token++);
    match_result m = tree.match(0, t.keys[c]);
    std::vector<kv_index> value = std::move(m.indices);
    const std::size_t cached = value.size();
    if (!t.cache->kv().alloc_extend(value.size(), value.empty() ? 0 : value.back(), tail, value)) {
      st.SkipWithError("KV pool exhausted: lower --benchmark_min_time");
      break;
    }
    const slot_id s = t.cache->slots().alloc_one();
    if (locked && !tree.inc_lock(m.last_node).ok()) {
      st.SkipWithError("lock failed");
      break;
    }
    const auto t0 = clk::now();
    auto r = locked ? tree.insert(0, key, value, s, cached, nullptr, m.last_node)
                    : tree.insert(0, key, value, s, t.keys[c].size());
    lat.stop(t0);
    if (locked) (void)tree.dec_lock(m.last_node);
    if (!r.ok() || r->mamba_exist) {
      st.SkipWithError("unexpected insert result");
      break;
    }
    if (!locked) t.insert_log.emplace_back(c, t.keys[c].size());
    t.keys[c] = std::move(key);
    if (t.cache->slots().available() < 8) tree.evict(0, 1024);  // stay in budget
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()));
}
void BM_Insert(benchmark::State& st) {
  insert_turns(st, false);
}
void BM_InsertLocked(benchmark::State& st) {
  insert_turns(st, true);
}

void BM_InsertFloor(benchmark::State& st) {
  // What BM_Insert cannot avoid: compare the cached prefix (the query against the tree's
  // copy; the lengths BM_Insert compared, call by call) and copy the 256-token tail's key
  // and ids into the new leaf.
  bench_tree& t =
      tree_for(static_cast<std::size_t>(st.range(0)), static_cast<std::size_t>(st.range(1)),
               static_cast<std::size_t>(st.range(2)));
  bench_tree::floor_data& f = t.floor_copy();
  if (t.insert_log.empty()) {
    st.SkipWithError("run BM_Insert of the same shape first (its calls are replayed)");
    return;
  }
  for (std::size_t c = 0; c < t.keys.size(); ++c)  // the tree's side of the grown keys
    if (f.keys[c].size() < t.keys[c].size()) f.keys[c] = t.keys[c];
  const std::size_t tail = 256 / t.page * t.page == 0 ? t.page : 256 / t.page * t.page;
  std::vector<token_id> tail_key(tail, 7);
  std::vector<kv_index> tail_ids(tail, 9);
  std::vector<token_id> leaf_key(tail);
  std::vector<kv_index> leaf_ids(tail);
  bench::call_latencies lat(st);
  std::size_t i = 0;
  for (auto _ : st) {
    // The same conversation and prefix length as BM_Insert's i-th call.
    const auto [c, n] = t.insert_log[i++ % t.insert_log.size()];
    // BM_Insert matches the conversation first (untimed: it needs the prefix's ids), which
    // warms the caches with its key; do the same here so the floor is not the colder one.
    benchmark::DoNotOptimize(std::memcmp(t.keys[c].data(), f.keys[c].data(), n * sizeof(token_id)));
    benchmark::DoNotOptimize(f.ids[c].data());
    const auto t0 = clk::now();
    int cmp = std::memcmp(t.keys[c].data(), f.keys[c].data(), n * sizeof(token_id));
    std::memcpy(leaf_key.data(), tail_key.data(), tail * sizeof(token_id));
    std::memcpy(leaf_ids.data(), tail_ids.data(), tail * sizeof(kv_index));
    lat.stop(t0);
    benchmark::DoNotOptimize(cmp);
    benchmark::DoNotOptimize(leaf_key.data());
    benchmark::DoNotOptimize(leaf_ids.data());
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()));
}

void BM_Evict(benchmark::State& st, bool mamba) {
  const auto ctx = static_cast<std::size_t>(st.range(0));
  const auto convs = static_cast<std::size_t>(st.range(1));
  const auto page = static_cast<std::size_t>(st.range(2));
  std::unique_ptr<bench_tree> t = std::make_unique<bench_tree>(ctx, convs, page);
  bench::call_latencies lat(st);
  for (auto _ : st) {
    const tree_sizes& s = t->cache->tree().sizes();
    if ((mamba && s.mamba_evictable == 0) || (!mamba && s.full_evictable == 0)) {
      t.reset();
      t = std::make_unique<bench_tree>(ctx, convs, page);
    }
    const auto t0 = clk::now();
    evict_result r = mamba ? t->cache->tree().evict(0, 1) : t->cache->tree().evict(page, 0);
    lat.stop(t0);
    benchmark::DoNotOptimize(r);
  }
}
void BM_EvictMamba(benchmark::State& st) {
  BM_Evict(st, true);
}
void BM_EvictPage(benchmark::State& st) {
  BM_Evict(st, false);
}

void BM_DecodeStep(benchmark::State& st) {
  const auto ctx = static_cast<std::size_t>(st.range(0));
  const auto page = static_cast<std::size_t>(st.range(1));
  constexpr std::size_t steps = 1024;  // decode tokens of one request
  radix_cache cache(cache_config{(ctx + steps + 2 * page) / page * page + page, page, 64, 64});
  bench::call_latencies lat(st);
  std::vector<kv_index> row;
  std::size_t left = 0;  // decode steps left to the current request
  for (auto _ : st) {
    if (left == 0) {
      st.PauseTiming();
      if (!row.empty() && !cache.kv().free(row).ok()) return st.SkipWithError("free refused");
      std::vector<kv_index> prefix;
      if (!cache.alloc_kv(0, 0, ctx, prefix).ok()) return st.SkipWithError("pool too small");
      // The row as a match returns it: capacity exactly the prefix.
      row = std::vector<kv_index>(prefix.begin(), prefix.end());
      left = steps;
      st.ResumeTiming();
    }
    const auto t0 = clk::now();
    const status s = cache.alloc_kv(row.size(), row.back(), 1, row);
    lat.stop(t0);
    if (!s.ok()) return st.SkipWithError(s.err().message.c_str());
    --left;
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()));
}

void BM_TraceReplay(benchmark::State& st, std::string path) {
  auto tr = replay::read_trace(path);
  if (!tr) {
    st.SkipWithError(tr.err().message.c_str());
    return;
  }
  std::size_t ops = 0;
  std::uint64_t total_ns = 0;
  for (auto _ : st) {
    replay::replayer rp(tr->config);
    std::uint64_t ns = 0;
    for (const replay::trace_op& op : tr->ops) {
      if (op.kind == replay::op_kind::check) continue;
      replay::outcome o;
      ns += rp.execute(op, o);
      ++ops;
    }
    total_ns += ns;
    st.SetIterationTime(static_cast<double>(ns) * 1e-9);
  }
  // Cache ops per second of timed cache work (checks excluded), as `hcctl replay --bench`.
  st.counters["ops_per_s"] =
      total_ns ? static_cast<double>(ops) * 1e9 / static_cast<double>(total_ns) : 0.0;
}

// Per tree shape: the match, its floor, the insert, its floor — side by side on one tree
// (built once per shape), so each ratio compares figures taken minutes apart at most.
[[maybe_unused]] const bool tree_benchmarks_registered = [] {
  for (int page : {1, 64})
    for (int convs : {100, 1000})
      for (int ctx : {1024, 4096, 16384, 65536}) {
        const std::vector<std::int64_t> args{ctx, convs, page};
        const std::vector<std::string> names{"ctx", "convs", "page"};
        for (auto [name, fn, iterations] :
             {std::tuple{"BM_MatchPrefix", &BM_MatchPrefix, 0},
              std::tuple{"BM_MatchFloor", &BM_MatchFloor, 0},
              std::tuple{"BM_Insert", &BM_Insert, 2000},
              std::tuple{"BM_InsertFloor", &BM_InsertFloor, 2000},
              std::tuple{"BM_InsertLocked", &BM_InsertLocked, 2000}}) {
          auto* b = benchmark::RegisterBenchmark(name, fn)
                        ->Args(args)
                        ->ArgNames(names)
                        ->UseManualTime()
                        ->Unit(benchmark::kMicrosecond);
          if (iterations) b->Iterations(iterations);
        }
      }
  return true;
}();
void evict_args(benchmark::internal::Benchmark* b) {
  for (int page : {1, 64})
    for (int convs : {100, 1000})
      b->Args({4096, convs, page});
  b->ArgNames({"ctx", "convs", "page"})
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond)
      ->Iterations(2000);
}

BENCHMARK(BM_EvictMamba)->Apply(evict_args);
BENCHMARK(BM_EvictPage)->Apply(evict_args);
BENCHMARK(BM_DecodeStep)
    ->ArgsProduct({{4096, 16384, 65536}, {1, 64}})
    ->ArgNames({"ctx", "page"})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(8 * 1024);

[[maybe_unused]] const bool traces_registered = [] {
  const char* dir = std::getenv("HC_TRACE_DIR");
  const std::filesystem::path d = dir ? dir : "tests/data";
  if (!std::filesystem::exists(d)) return false;
  for (const auto& e : std::filesystem::directory_iterator(d)) {
    const std::string p = e.path().string();
    if (p.find(".jsonl") == std::string::npos) continue;
    benchmark::RegisterBenchmark(("BM_TraceReplay/" + e.path().filename().string()).c_str(),
                                 BM_TraceReplay, p)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace

void rpc_bench_teardown();  // rpc_bench.cpp

int main(int argc, char** argv) {
  // Before anything opens a file: 0, 1 and 2 that were closed become /dev/null.
  if (const int rc = hc::cli::make_standard_streams_safe("hcbench"); rc >= 0) return rc;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  rpc_bench_teardown();
  return 0;
}
