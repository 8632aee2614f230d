// hcbench tier figures (issue 5; BENCHMARKS.md §5), every one beside its floor measured
// in the same run on the same disk / memory:
//
//   BM_L3Put/<bytes>       RocksDB store set() of fresh values (no WAL, BlobDB)
//   BM_FileWrite/<bytes>   the same bytes appended to one file (the disk write floor)
//   BM_L3Get/<bytes>       store get() in random order, values in the page cache
//   BM_FileRead/<bytes>    pread of the same bytes from one file (page cache)
//   BM_PrefetchRead        l3::read_pages of 64 pages (+ the state) into the L2 host pools
//   BM_L2PageCopy/<bytes>  a page into the page-first host pool (what a D->H copy does)
//   BM_Memcpy/<bytes>      plain memcpy of the same bytes (the memory floor)
//
// Value sizes: 64 KiB (a KV page of a small model) and 1 MiB (a page of a large model,
// or an SSM state). Data lives under $HC_BENCH_DIR (default /tmp), 256 MiB per size.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "actors/host_storage/host_pools.hpp"
#include "storage/rocksdb_store.hpp"
#include "storage/tier_io.hpp"

namespace {

using namespace hc;
constexpr std::size_t dataset_bytes = 256ull << 20;

std::filesystem::path bench_dir(const std::string& leaf) {
  const char* d = std::getenv("HC_BENCH_DIR");
  auto p = std::filesystem::path(d ? d : "/tmp") / ("hcbench-" + leaf);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    const std::uint64_t x = rng();
    std::memcpy(v.data() + i, &x, 8);
  }
  return v;
}

std::unique_ptr<rocksdb_store> open_store(const std::filesystem::path& p) {
  rocksdb_store_config cfg;
  cfg.path = p.string();
  cfg.capacity_bytes = 4 * dataset_bytes;
  auto s = rocksdb_store::open(cfg);
  if (!s) std::abort();
  return std::move(*s);
}

void BM_L3Put(benchmark::State& st) {
  const auto size = static_cast<std::size_t>(st.range(0));
  const auto dir = bench_dir("put");
  auto store = open_store(dir / "db");
  const auto value = random_bytes(size, 1);
  std::size_t i = 0;
  for (auto _ : st) {
    if (!store->set(l3_pool::kv_page, "k" + std::to_string(i++), value)) st.SkipWithError("set");
    if (i * size >= dataset_bytes) {  // keep the store bounded: start over
      st.PauseTiming();
      store.reset();
      std::filesystem::remove_all(dir / "db");
      store = open_store(dir / "db");
      i = 0;
      st.ResumeTiming();
    }
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * size));
  store.reset();
  std::filesystem::remove_all(dir);
}

void BM_FileWrite(benchmark::State& st) {
  const auto size = static_cast<std::size_t>(st.range(0));
  const auto dir = bench_dir("fwrite");
  const auto value = random_bytes(size, 1);
  int fd = ::open((dir / "f").c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
  std::size_t written = 0;
  for (auto _ : st) {
    if (::write(fd, value.data(), size) != static_cast<ssize_t>(size)) st.SkipWithError("write");
    written += size;
    if (written >= dataset_bytes) {
      st.PauseTiming();
      (void)::ftruncate(fd, 0);
      (void)::lseek(fd, 0, SEEK_SET);
      written = 0;
      st.ResumeTiming();
    }
  }
  ::close(fd);
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * size));
  std::filesystem::remove_all(dir);
}

void BM_L3Get(benchmark::State& st) {
  const auto size = static_cast<std::size_t>(st.range(0));
  const auto dir = bench_dir("get");
  auto store = open_store(dir / "db");
  const std::size_t n = dataset_bytes / size;
  const auto value = random_bytes(size, 2);
  for (std::size_t i = 0; i < n; ++i)
    (void)store->set(l3_pool::kv_page, "k" + std::to_string(i), value);
  std::mt19937_64 rng(7);
  std::vector<std::byte> out;
  for (auto _ : st) {
    if (!store->get(l3_pool::kv_page, "k" + std::to_string(rng() % n), out))
      st.SkipWithError("get");
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * size));
  store.reset();
  std::filesystem::remove_all(dir);
}

void BM_FileRead(benchmark::State& st) {
  const auto size = static_cast<std::size_t>(st.range(0));
  const auto dir = bench_dir("fread");
  const std::size_t n = dataset_bytes / size;
  const auto value = random_bytes(size, 2);
  int fd = ::open((dir / "f").c_str(), O_CREAT | O_TRUNC | O_RDWR, 0600);
  for (std::size_t i = 0; i < n; ++i)
    (void)!::write(fd, value.data(), size);
  std::vector<std::byte> out(size);
  std::mt19937_64 rng(7);
  for (auto _ : st) {
    const auto off = static_cast<off_t>((rng() % n) * size);
    if (::pread(fd, out.data(), size, off) != static_cast<ssize_t>(size)) st.SkipWithError("read");
  }
  ::close(fd);
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * size));
  std::filesystem::remove_all(dir);
}

void BM_PrefetchRead(benchmark::State& st) {
  const std::size_t page_tokens = 64, token_bytes = 1024, pages = 64;  // 64 KiB pages
  const std::size_t state_bytes = 1 << 20;
  const auto dir = bench_dir("prefetch");
  auto store = open_store(dir / "db");
  std::vector<std::string> keys;
  const auto page = random_bytes(page_tokens * token_bytes, 3);
  for (std::size_t i = 0; i < pages; ++i) {
    keys.push_back("p" + std::to_string(i));
    (void)store->set(l3_pool::kv_page, keys.back(), page);
  }
  (void)store->set(l3_pool::ssm_state, keys.back(), random_bytes(state_bytes, 4));
  host_pool_sizes sz{pages * page_tokens, 2, token_bytes, state_bytes};
  host_pools host(sz, page_tokens);
  std::vector<std::span<std::byte>> dst;
  for (std::size_t i = 0; i < pages; ++i)
    dst.push_back(host.kv(static_cast<kv_index>((i + 1) * page_tokens), page_tokens));
  for (auto _ : st) {
    auto r = l3::read_pages(*store, keys, dst, host.state(1), steady(),
                            steady().now() + std::chrono::seconds(60));
    if (r.pages_read != pages || !r.state_read) st.SkipWithError("read_pages");
  }
  st.SetBytesProcessed(
      static_cast<std::int64_t>(st.iterations() * (pages * page.size() + state_bytes)));
  store.reset();
  std::filesystem::remove_all(dir);
}

void BM_L2PageCopy(benchmark::State& st) {
  const auto size = static_cast<std::size_t>(st.range(0));
  const std::size_t page_tokens = 64, token_bytes = size / page_tokens;
  const std::size_t pages = dataset_bytes / size;
  host_pool_sizes sz{pages * page_tokens, 1, token_bytes, 64};
  host_pools host(sz, page_tokens);
  const auto src = random_bytes(size * 16, 5);  // a small "device" pool
  std::size_t i = 0;
  for (auto _ : st) {
    auto dst = host.kv(static_cast<kv_index>((1 + i % pages) * page_tokens), page_tokens);
    std::memcpy(dst.data(), src.data() + (i % 16) * size, size);
    benchmark::DoNotOptimize(dst.data());
    ++i;
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * size));
}

void BM_Memcpy(benchmark::State& st) {
  const auto size = static_cast<std::size_t>(st.range(0));
  const std::size_t slots = dataset_bytes / size;
  std::vector<std::byte> dst(dataset_bytes);
  const auto src = random_bytes(size * 16, 5);
  std::size_t i = 0;
  for (auto _ : st) {
    std::memcpy(dst.data() + (i % slots) * size, src.data() + (i % 16) * size, size);
    benchmark::DoNotOptimize(dst.data());
    ++i;
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * size));
}

// Floors and figures interleaved, each figure right after its floor.
// Wall time: RocksDB works on background threads too.
BENCHMARK(BM_FileWrite)->Arg(64 << 10)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_L3Put)->Arg(64 << 10)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_FileRead)->Arg(64 << 10)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_L3Get)->Arg(64 << 10)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_PrefetchRead)->UseRealTime();
BENCHMARK(BM_Memcpy)->Arg(64 << 10)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_L2PageCopy)->Arg(64 << 10)->Arg(1 << 20)->UseRealTime();

}  // namespace
