// hcbench tier figures through the node (BENCHMARKS.md §5), each beside its floor in the
// same run: a worker on a Unix socket, an in-process node with a RocksDB L3 store under
// $HC_BENCH_DIR (default /tmp). One request of 2048 tokens, page 64, 4 KiB of KV per
// token (32 pages of 256 KiB = 8 MiB) and a 1 MiB SSM state:
//
//   BM_NodePrefetch      a fresh instance (new host pools; same L3 keys) prefetches the
//                        prompt from L3 into L2: create + prefetch + poll until completed
//   BM_StoreReadPrompt   l3::read_pages of the same pages and state straight from the store
//                        (the floor: no node, no RPC)
//   BM_NodeLoadBack      match that loads the prompt back from L2 + beginForward (the H->D
//                        copies run) + endForward + abort + evict (demotes again)
//   BM_MemcpyPrompt      memcpy of the same bytes (the memory floor)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <thread>

#include "actors/node/node.hpp"
#include "schema/client.hpp"
#include "schema/server/rpc_server.hpp"
#include "storage/l3_keys.hpp"
#include "storage/rocksdb_store.hpp"
#include "storage/sha256_page_hasher.hpp"
#include "storage/tier_io.hpp"

namespace {

using namespace hc;

constexpr std::size_t P = 64, token_bytes = 4096, state_bytes = 1 << 20, prompt = 2048;
constexpr std::size_t prompt_bytes = prompt * token_bytes + state_bytes;

instance_spec spec(double ratio) {
  instance_spec s;
  s.model_id = "hcbench-tiers";
  s.page_size = P;
  s.kv_tokens = 4 * prompt;
  s.kv_bytes_per_token = token_bytes;
  s.ssm_slots = 8;
  s.ssm_slot_bytes = state_bytes;
  s.chunk_size = P;
  s.request_rows = 4;
  s.strat = strategy::extra_buffer;
  s.overlap = false;
  s.hicache_ratio = ratio;  // a new ratio = a new instance with the same L3 keys
  s.prefetch_threshold = P;
  s.prefetch_policy = prefetch_termination::wait_complete;
  return s;
}

std::vector<token_id> prompt_tokens() {
  std::vector<token_id> t(prompt);
  std::iota(t.begin(), t.end(), 1000);
  return t;
}

/// The prompt followed by `last`, for request h.
cmd::create create_of(request_handle h, token_id last) {
  cmd::create c{h, 0, prompt_tokens(), {}};
  c.tokens.push_back(last);
  return c;
}

/// A node on a private socket with a RocksDB L3, and a client.
struct bench_node {
  null_metrics metrics;
  std::filesystem::path dir;
  std::shared_ptr<l3_store> store;
  std::unique_ptr<node> n;
  std::unique_ptr<rpc_server> server;
  std::unique_ptr<client> c;
  std::uint64_t batch = 0;

  bench_node() {
    const char* d = std::getenv("HC_BENCH_DIR");
    dir = std::filesystem::path(d ? d : "/tmp") / "hcbench-node-tiers";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    rocksdb_store_config sc;
    sc.path = (dir / "l3").string();
    auto s = rocksdb_store::open(sc);
    if (!s) std::abort();
    store = std::move(*s);
    node_config nc;
    nc.metrics = &metrics;
    nc.l3 = store;
    nc.max_idle_instances = 0;
    n = std::make_unique<node>(nc);
    server = std::make_unique<rpc_server>(*n, metrics);
    rpc_server_config rc;
    rc.unix_path = (dir / "node.sock").string();
    if (!server->start(rc)) std::abort();
    auto cl = client::connect("unix:" + rc.unix_path);
    if (!cl) std::abort();
    c = std::move(*cl);
  }
  ~bench_node() {
    c.reset();
    server->stop();
    n->shutdown();
    store.reset();
    std::filesystem::remove_all(dir);
  }
  std::vector<command_result> step(client_session& s, std::vector<command> cmds) {
    auto r = s.step(cmds);
    if (!r) std::abort();
    for (const auto& one : *r)
      if (!one.ok()) std::abort();
    return std::move(*r);
  }
  cmd::take_ops take_ops(request_handle h) { return {{h}, ++batch}; }
  /// Creates request h and polls its prefetch until it ended; the outcome.
  res::prefetch prefetched(client_session& s, const cmd::create& create) {
    auto r = step(s, {create, cmd::prefetch{create.req, false}});
    while (r.back().as<res::prefetch>().outcome.empty())
      r = step(s, {cmd::prefetch{create.req, false}});
    return r.back().as<res::prefetch>();
  }
  /// Serves the prompt once (extra_buffer: the prefill snapshot is the tracked state), so
  /// it is inserted, backed up to the host and written to L3.
  void serve(client_session& s) {
    step(s, {create_of(1, 1), cmd::match{1}, cmd::lock{1}, cmd::alloc_req{1},
             cmd::alloc_kv{1, 0, prompt + 1}, cmd::prepare_extend{1, 0, prompt + 1}, take_ops(1)});
    if (!s.begin_forward(batch) || !s.end_forward(batch)) std::abort();
    step(s, {cmd::finish{1, 0}});
  }
};

/// Serves the prompt and waits until it is in L3. (A node per benchmark run: a static
/// one would outlive CAF's own statics at exit.)
void store_prompt(bench_node& b) {
  auto s = b.c->open(spec(2.0));
  if (!s) std::abort();
  b.serve(**s);
  for (int i = 0; i < 5000 && b.store->usage().values < prompt / P + 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (b.store->usage().values < prompt / P + 1) std::abort();
}

void BM_NodePrefetch(benchmark::State& st) {
  bench_node b;
  store_prompt(b);
  double ratio = 2.0;
  std::uint64_t hits = 0;
  for (auto _ : st) {
    st.PauseTiming();
    ratio += 1.0 / 1024;  // a fresh instance: empty L2, same L3 keys
    auto s = b.c->open(spec(ratio));
    if (!s) std::abort();
    st.ResumeTiming();
    const res::prefetch done = b.prefetched(**s, create_of(2, 7));
    if (done.outcome != "completed") std::abort();
    hits += done.storage_hit_tokens;
    st.PauseTiming();
    s->reset();  // closes the session: the instance goes (max idle 0)
    st.ResumeTiming();
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * prompt_bytes));
  st.counters["hit_tokens"] = static_cast<double>(hits) / static_cast<double>(st.iterations());
}

void BM_StoreReadPrompt(benchmark::State& st) {
  bench_node b;
  store_prompt(b);
  sha256_page_hasher hasher;
  const instance_spec sp = spec(2.0);
  const std::string fp =
      l3::fingerprint({sp.model_id, sp.tp_rank, sp.tp_size, P * token_bytes, state_bytes});
  const std::vector<token_id> toks = prompt_tokens();
  std::vector<std::string> keys;
  page_digest prior;
  for (std::size_t i = 0; i < prompt; i += P) {
    prior = hasher.hash_page(i ? &prior : nullptr, std::span<const token_id>(toks).subspan(i, P));
    keys.push_back(l3::page_key(fp, sp.ns, prior));
  }
  std::vector<std::byte> pages(prompt * token_bytes), state(state_bytes);
  std::vector<std::span<std::byte>> dst;
  for (std::size_t i = 0; i < keys.size(); ++i)
    dst.emplace_back(pages.data() + i * P * token_bytes, P * token_bytes);
  for (auto _ : st) {
    auto rr = l3::read_pages(*b.store, keys, dst, state, steady(),
                             steady().now() + std::chrono::seconds(30));
    if (rr.pages_read != keys.size() || !rr.state_read) std::abort();
    benchmark::DoNotOptimize(pages.data());
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * prompt_bytes));
}

void BM_NodeLoadBack(benchmark::State& st) {
  bench_node b;
  store_prompt(b);
  auto s = b.c->open(spec(4.0));  // its own instance: prefetch once, then load back
  if (!s) std::abort();
  cmd::create create = create_of(3, 9);
  (void)b.prefetched(**s, create);
  b.step(**s, {cmd::abort{3}});
  const cmd::evict evict{4 * prompt, 8};
  request_handle h = 100;
  std::uint64_t loaded = 0;
  for (auto _ : st) {
    create.req = ++h;
    auto m = b.step(**s, {create, cmd::match{h}, b.take_ops(h)});
    if (!(*s)->begin_forward(b.batch) || !(*s)->end_forward(b.batch)) std::abort();
    loaded += m[1].as<res::match>().loaded_tokens;
    b.step(**s, {cmd::abort{h}, evict});
  }
  if (loaded != st.iterations() * prompt) std::abort();  // every iteration loaded it all
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * prompt_bytes));
}

void BM_MemcpyPrompt(benchmark::State& st) {
  std::vector<std::byte> a(prompt_bytes, std::byte{1}), b(prompt_bytes);
  for (auto _ : st) {
    std::memcpy(b.data(), a.data(), prompt_bytes);
    benchmark::DoNotOptimize(b.data());
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * prompt_bytes));
}

}  // namespace

BENCHMARK(BM_StoreReadPrompt)->UseRealTime();
BENCHMARK(BM_NodePrefetch)->UseRealTime();
BENCHMARK(BM_MemcpyPrompt)->UseRealTime();
BENCHMARK(BM_NodeLoadBack)->UseRealTime();
