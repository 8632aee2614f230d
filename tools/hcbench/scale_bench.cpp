// hcbench scale figures (issue 19; BENCHMARKS.md §2.2): does a call's cost stay flat as the
// tree grows from 10 K to 10 M cached tokens?
//
//   BM_Scale/tokens:N/page:P   a tree filled with conversations of 4K tokens (a 512-token
//                              system prompt shared by 16 groups, then each conversation's
//                              own tokens) until it caches N tokens; then, in this order,
//                              2,000 matches of a random whole conversation, 2,000 inserts
//                              of a 256-token turn under a random conversation
//                              (prev_prefix_len = its cached prefix, the
//                              cache_finished_req shape; each turn a new branch at the
//                              conversation's end) and 2,000 evict(num_tokens=P).
//                              The inserts grow the tree by up to 2,000 × 256 tokens
//                              (counter cached_tokens_after_inserts: at 10 K and 100 K
//                              that dominates the size); each eviction is followed by an
//                              untimed insert of a new conversation, so the evictions see
//                              the size they start with.
//                              Counters: p50 / p99 of each call in µs, and the tree's nodes.
//                              Beside the matches, their floor (key_floor_*): the read an
//                              exact match cannot skip — each node key on the conversation's
//                              path, from where the tree keeps it, compared with the prompt
//                              (in cache) by memcmp, the path walked from the leaf up;
//                              and the same with every line of those keys prefetched
//                              first (key_floor_prefetched_*).
//                              And both again with the CPU's caches emptied before each
//                              call (match_cold_*, key_floor_cold_*; 500 calls each): every
//                              size then reads its tree from DRAM, so what is left between
//                              the sizes is the structure's own growth, not what the caches
//                              hold (BENCHMARKS.md §2.2.5). HC_BENCH_COLD_CALLS=N sets
//                              their count (0 leaves them out): a sweep reads four times the
//                              last-level cache, ~6 ms here but ~0.1 s on a 300 MiB one.
//
//   BM_BlockReadByFootprint/mib:N   the key floor's read alone: a memcmp of a random
//                              14 KiB block of an N MiB buffer, as the cached footprint grows.
//
// Each call is timed alone (steady_clock around the call); building the keys is not timed.
// One iteration per size: the figures are percentiles over the 2,000 calls.
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "actors/radix_cache/radix_cache.hpp"
#include "actors/radix_cache/radix_node.hpp"
#include "tools/hcbench/call_latencies.hpp"

namespace {

using namespace hc;
using clk = std::chrono::steady_clock;

constexpr std::size_t conv_tokens = 4096;
constexpr std::size_t system_tokens = 512;
constexpr std::size_t groups = 16;
constexpr std::size_t turn_tokens = 256;
constexpr std::size_t calls = 2000;

/// Calls timed with the caches emptied first, per kind: 500, or HC_BENCH_COLD_CALLS (a
/// count; 0 leaves the cold figures out). An unreadable value is refused where it is read.
std::optional<std::size_t> cold_calls_from_env() {
  const char* v = std::getenv("HC_BENCH_COLD_CALLS");
  if (v == nullptr || *v == '\0') return std::size_t{500};
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (errno != 0 || *end != '\0' || *v == '-' || n > 1'000'000) return std::nullopt;
  return static_cast<std::size_t>(n);
}

double micros(clk::time_point t0, clk::time_point t1) {
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

/// The last-level cache one core sees, in bytes (sysfs; 32 MiB if it cannot be read).
std::size_t last_level_cache_bytes() {
  std::size_t best = 0;
  for (int i = 0; i < 8; ++i) {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
    std::size_t n = 0;
    char unit = 0;
    if (!(f >> n)) continue;
    f >> unit;
    best = std::max(best, unit == 'K' ? n << 10 : unit == 'M' ? n << 20 : n);
  }
  return best != 0 ? best : std::size_t{32} << 20;
}

/// Empties the CPU's caches of everything else by reading a buffer four times the last-level
/// cache (at least 128 MiB) line by line: what a call touches afterwards comes from DRAM.
/// The buffer is kept on 4 KiB pages (MADV_NOHUGEPAGE), so a sweep also empties the TLBs
/// whatever the heap's pages are (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, §2.2.5).
class cache_sweeper {
 public:
  cache_sweeper() : bytes_(std::max(4 * last_level_cache_bytes(), std::size_t{128} << 20)) {
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;  // sweep() then does nothing; ok() says so
    (void)madvise(p, bytes_, MADV_NOHUGEPAGE);
    buf_ = static_cast<unsigned char*>(p);
    std::memset(buf_, 1, bytes_);
  }
  cache_sweeper(const cache_sweeper&) = delete;
  cache_sweeper& operator=(const cache_sweeper&) = delete;
  ~cache_sweeper() {
    if (buf_ != nullptr) munmap(buf_, bytes_);
  }
  bool ok() const { return buf_ != nullptr; }
  void sweep() const {
    if (buf_ == nullptr) return;
    unsigned sum = 0;
    for (std::size_t i = 0; i < bytes_; i += 64)
      sum += buf_[i];
    benchmark::DoNotOptimize(sum);
  }

 private:
  std::size_t bytes_;
  unsigned char* buf_ = nullptr;
};

void BM_Scale(benchmark::State& st) {
  const std::optional<std::size_t> cold_from_env = cold_calls_from_env();
  if (!cold_from_env) {
    st.SkipWithError("HC_BENCH_COLD_CALLS: want a count of calls, 0 to 1000000");
    return;
  }
  const std::size_t cold_calls = *cold_from_env;
  const auto target = static_cast<std::size_t>(st.range(0));
  const auto page = static_cast<std::size_t>(st.range(1));
  const std::size_t convs = std::max<std::size_t>(2, target / (conv_tokens - system_tokens));
  const std::size_t kv =
      (target + convs * system_tokens + calls * (turn_tokens + page) + (1u << 16)) / page * page +
      page;
  radix_cache cache(cache_config{kv, page, convs + calls + 64, 64});
  std::mt19937_64 rng(2026);
  std::vector<std::vector<token_id>> keys;
  keys.reserve(convs);
  std::vector<node_ref> leaves;  // each conversation's last node, for the key floor
  leaves.reserve(convs);
  token_id next = 1 << 24;
  // A new conversation into the tree (its key appended to keys); false if refused.
  auto add_conversation = [&](std::size_t c) {
    std::vector<token_id> k(conv_tokens / page * page);
    for (std::size_t i = 0; i < k.size(); ++i)
      k[i] = i < system_tokens ? static_cast<token_id>(1 + (c % groups) * 1000003 + i)
                               : static_cast<token_id>(1 + rng() % 150000);
    std::vector<kv_index> v;
    slot_id s = cache.slots().alloc_one();
    if (s == no_slot) {
      cache.tree().evict(0, 1);
      s = cache.slots().alloc_one();
    }
    if (cache.kv().available() < k.size())  // make room (untimed) like a scheduler would
      cache.tree().evict(k.size() - cache.kv().available(), 0);
    if (s == no_slot || !cache.kv().alloc_extend(0, 0, k.size(), v)) return false;
    auto r = cache.tree().insert(0, k, v, s);
    if (!r.ok()) return false;
    if (r->mamba_exist) (void)cache.slots().free_one(s);
    keys.push_back(std::move(k));
    leaves.push_back(r->node);
    return true;
  };
  for (std::size_t c = 0; c < convs; ++c)
    if (!add_conversation(c)) {
      st.SkipWithError("pools too small for the tree");
      return;
    }
  const std::size_t cached = cache.tree().sizes().total_tokens();

  // Their p50 / p99 become the counters match_p50_us, ..., evict_p99_us.
  bench::call_latencies match_us(st, "match_", calls),
      match_in_cache_us(st, "match_prompt_in_cache_", calls), insert_us(st, "insert_", calls),
      evict_us(st, "evict_", calls), key_floor_us(st, "key_floor_", calls),
      key_floor_prefetched_us(st, "key_floor_prefetched_", calls),
      match_cold_us(st, "match_cold_", cold_calls),
      key_floor_cold_us(st, "key_floor_cold_", cold_calls);
  std::optional<cache_sweeper> sweeper;  // only where cold calls are timed
  if (cold_calls > 0 && !sweeper.emplace().ok()) {
    st.SkipWithError("no memory for the cache sweep's buffer");
    return;
  }
  std::vector<token_id> prompt;
  std::vector<const radix_node*> path;
  prompt.reserve(conv_tokens);
  // 2,000 matches of random whole conversations. With `in_cache`, each prompt as a worker's
  // request brings it: just written (here copied, untimed, into one reused buffer), so in
  // the CPU's caches — only the tree's side of the compare comes from memory.
  // With `cold`, cold_calls calls, each after the caches were emptied (the prompt is copied
  // after that, so it is in cache as a worker's request brings it; the tree is not).
  auto time_key_floor = [&](bench::call_latencies& into, bool prefetch, bool cold = false) {
    for (std::size_t i = 0; i < (cold ? cold_calls : calls); ++i) {
      const std::size_t c = rng() % keys.size();
      if (cold) sweeper->sweep();
      prompt.assign(keys[c].begin(), keys[c].end());
      if (!cache.tree().valid(leaves[c])) {
        st.SkipWithError("a conversation's leaf went away");
        return false;
      }
      const auto t0 = clk::now();
      path.clear();
      for (const radix_node* x = leaves[c].node; x->parent != nullptr; x = x->parent)
        path.push_back(x);
      if (prefetch)
        for (const radix_node* x : path) {
          const auto* bytes = reinterpret_cast<const char*>(x->key.data());
          for (std::size_t b = 0; b < x->key.size() * sizeof(token_id); b += 64)
            __builtin_prefetch(bytes + b);
        }
      std::size_t at = 0;
      bool same = true;
      for (auto it = path.rbegin(); it != path.rend(); ++it) {
        const std::vector<token_id>& k = (*it)->key;
        same &= std::memcmp(k.data(), prompt.data() + at, k.size() * sizeof(token_id)) == 0;
        at += k.size();
      }
      const auto t1 = clk::now();
      if (!same || at != prompt.size()) {
        st.SkipWithError("the path's keys do not spell the conversation");
        return false;
      }
      into.add(micros(t0, t1));
    }
    return true;
  };
  auto time_matches = [&](bench::call_latencies& into, bool in_cache, bool cold = false) {
    for (std::size_t i = 0; i < (cold ? cold_calls : calls); ++i) {
      const auto& key = keys[rng() % keys.size()];
      std::span<const token_id> query = key;
      if (cold) sweeper->sweep();
      if (in_cache) {
        prompt.assign(key.begin(), key.end());
        query = prompt;
      }
      const auto t0 = clk::now();
      match_result m = cache.tree().match(0, query);
      const auto t1 = clk::now();
      benchmark::DoNotOptimize(m.indices.data());
      into.add(micros(t0, t1));
    }
  };
  for (auto _ : st) {
    time_matches(match_us, false);
    time_matches(match_in_cache_us, true);
    // The floor of those matches: prompts as above (copied, untimed), each compared with the
    // tree's keys of its conversation where the tree keeps them — the read any index of
    // exact 4-byte tokens makes — with no child lookup, id copy or recency refresh. The
    // matches above changed nothing (whole conversations match to their leaves, unsplit).
    // Twice: by memcmp alone (key_floor_*), and with every line of the path's keys asked
    // for before the first compare (key_floor_prefetched_*: the fastest this read was
    // found to go here, BENCHMARKS.md §2.2.4).
    if (!time_key_floor(key_floor_us, false) || !time_key_floor(key_floor_prefetched_us, true))
      return;
    // The same match and its floor with the tree out of the caches at every size (§2.2.5).
    if (cold_calls > 0) {
      time_matches(match_cold_us, true, true);
      if (!time_key_floor(key_floor_cold_us, false, true)) return;
    }
    // Untimed random matches, as the warm loops above made them: the inserts below find the
    // caches as they did before the cold calls emptied them.
    for (std::size_t i = 0; i < calls; ++i)
      benchmark::DoNotOptimize(cache.tree().match(0, keys[rng() % keys.size()]).indices.data());
    for (std::size_t i = 0; i < calls; ++i) {
      const std::size_t c = rng() % keys.size();
      match_result m = cache.tree().match(0, keys[c]);
      std::vector<token_id> key = keys[c];
      key.resize(m.indices.size());  // what is cached of it (evictions may have cut it)
      const std::size_t prefix = key.size();
      std::vector<kv_index> value = std::move(m.indices);
      for (std::size_t j = 0; j < turn_tokens; ++j)
        key.push_back(next++);
      if (!cache.kv().alloc_extend(prefix, value.empty() ? 0 : value.back(), turn_tokens, value)) {
        st.SkipWithError("KV pool exhausted");
        return;
      }
      slot_id s = cache.slots().alloc_one();
      if (s == no_slot) {
        cache.tree().evict(0, 1);
        s = cache.slots().alloc_one();
      }
      const auto t0 = clk::now();
      auto r = cache.tree().insert(0, key, value, s, prefix);
      const auto t1 = clk::now();
      if (!r.ok()) {
        st.SkipWithError(r.err().message.c_str());
        return;
      }
      if (r->mamba_exist) (void)cache.slots().free_one(s);
      insert_us.add(micros(t0, t1));
      // keys[c] stays: the next turn under c is a sibling branch, so conversations keep
      // their length (a chain of 1,000 turns would make the 10 K tree a 260 K-token path).
    }
    st.counters["cached_tokens_after_inserts"] =
        static_cast<double>(cache.tree().sizes().total_tokens());
    for (std::size_t i = 0; i < calls; ++i) {
      const auto t0 = clk::now();
      evict_result e = cache.tree().evict(page, 0);
      const auto t1 = clk::now();
      benchmark::DoNotOptimize(e);
      evict_us.add(micros(t0, t1));
      if (!add_conversation(keys.size())) {  // back to the size under test
        st.SkipWithError("pools too small to refill the tree");
        return;
      }
    }
  }
  st.counters["cached_tokens_at_end"] = static_cast<double>(cache.tree().sizes().total_tokens());
  st.counters["cached_tokens"] = static_cast<double>(cached);
  st.counters["nodes"] = static_cast<double>(cache.tree().node_count());
}

/// The read floor by footprint: a memcmp of a random 14 KiB block (a 4K-token conversation's
/// own key) of a buffer of N MiB with a buffer in cache, 4,000 calls — how the cost of the
/// same read grows as what it is read from outgrows the caches (BENCHMARKS.md §2.2.3).
void BM_BlockReadByFootprint(benchmark::State& st) {
  constexpr std::size_t block = 14 * 1024;
  constexpr std::size_t reads = 4000;
  const std::size_t bytes = static_cast<std::size_t>(st.range(0)) << 20;
  std::vector<unsigned char> from(bytes, 1);
  const std::vector<unsigned char> prompt(block, 1);
  // Read twice before timing, so that what fits in the caches is there (the constructor's
  // fill of a large buffer bypasses them: glibc's memset stores non-temporally).
  unsigned sum = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t i = 0; i < bytes; i += 64)
      sum += from[i];
  benchmark::DoNotOptimize(sum);
  std::mt19937_64 rng(2026);
  bench::call_latencies read_us(st, "", reads);
  for (auto _ : st) {
    for (std::size_t i = 0; i < reads; ++i) {
      const std::size_t at = rng() % (bytes / block) * block;
      const auto t0 = clk::now();
      const int d = std::memcmp(from.data() + at, prompt.data(), block);
      const auto t1 = clk::now();
      benchmark::DoNotOptimize(d);
      read_us.add(micros(t0, t1));
    }
  }
}

BENCHMARK(BM_BlockReadByFootprint)
    ->ArgName("mib")
    ->Arg(1)
    ->Arg(8)
    ->Arg(16)
    ->Arg(24)
    ->Arg(48)
    ->Arg(256)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_Scale)
    ->ArgsProduct({{10'000, 100'000, 1'000'000, 10'000'000}, {1, 64}})
    ->ArgNames({"tokens", "page"})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
