// hcbench tier figures (issue 5; BENCHMARKS.md §5), every one beside its floor measured
// in the same run on the same disk / memory:
//
//   BM_L3Put/<bytes>/<direct>    L3 store set() of fresh values (segment files, RocksDB index)
//   BM_FileWrite/<bytes>/<direct> the same bytes appended to one file (the disk write floor)
//   BM_L3Get/<bytes>/<direct>/<verify>  store get_into() a buffer, random order (what a
//                                prefetch does into the L2 pools); verify 1: the checksum on
//                                every read (verify_every_read), 0: on a value's first read
//   BM_FileRead/<bytes>/<direct> pread of the same bytes from one file
//   <direct> 0: buffered I/O (the page cache holds the data set); 1: O_DIRECT for the
//   floor and the store's direct_io option (segment reads and writes bypass the page cache;
//   each read goes to the device)
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

/// A store key: `prefix` and the number i. Built by appending: GCC 12 warns (-Wrestrict,
/// bug 105329) about "k" + std::to_string(i) when it inlines it.
std::string numbered_key(char prefix, std::size_t i) {
  std::string k(1, prefix);
  k += std::to_string(i);
  return k;
}

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

/// A buffer aligned for O_DIRECT (4 KiB), filled from random_bytes.
struct aligned_buffer {
  std::byte* data = nullptr;
  std::size_t size = 0;
  aligned_buffer(std::size_t n, unsigned seed) : size(n) {
    if (::posix_memalign(reinterpret_cast<void**>(&data), 4096, n) != 0) std::abort();
    const auto r = random_bytes(n, seed);
    std::memcpy(data, r.data(), n);
  }
  ~aligned_buffer() { std::free(data); }
  aligned_buffer(const aligned_buffer&) = delete;
  aligned_buffer& operator=(const aligned_buffer&) = delete;
  std::span<std::byte> span() { return {data, size}; }
};

int open_file(const std::filesystem::path& p, int flags, bool direct) {
  return ::open(p.c_str(), flags | (direct ? O_DIRECT : 0), 0600);
}

std::unique_ptr<rocksdb_store> open_store(const std::filesystem::path& p, bool direct = false,
                                          bool verify = false) {
  rocksdb_store_config cfg;
  cfg.path = p.string();
  cfg.direct_io = direct;
  cfg.verify_every_read = verify;
  cfg.capacity_bytes = 4 * dataset_bytes;
  auto s = rocksdb_store::open(cfg);
  if (!s) std::abort();
  return std::move(*s);
}

void BM_L3Put(benchmark::State& st) {
  const auto size = static_cast<std::size_t>(st.range(0));
  const bool direct = st.range(1) != 0;
  const auto dir = bench_dir("put");
  auto store = open_store(dir / "db", direct);
  const auto value = random_bytes(size, 1);
  std::size_t i = 0;
  for (auto _ : st) {
    if (!store->set(l3_pool::kv_page, numbered_key('k', i++), value)) st.SkipWithError("set");
    if (i * size >= dataset_bytes) {  // keep the store bounded: start over
      st.PauseTiming();
      store.reset();
      std::filesystem::remove_all(dir / "db");
      store = open_store(dir / "db", direct);
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
  const bool direct = st.range(1) != 0;
  const auto dir = bench_dir("fwrite");
  aligned_buffer value(size, 1);
  int fd = open_file(dir / "f", O_CREAT | O_TRUNC | O_WRONLY, direct);
  if (fd < 0) {
    st.SkipWithError("open (O_DIRECT refused by this filesystem?)");
    return;
  }
  std::size_t written = 0;
  for (auto _ : st) {
    if (::write(fd, value.data, size) != static_cast<ssize_t>(size)) st.SkipWithError("write");
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
  const bool direct = st.range(1) != 0;
  const bool verify = st.range(2) != 0;
  const auto dir = bench_dir("get");
  auto store = open_store(dir / "db", direct, verify);
  const std::size_t n = dataset_bytes / size;
  const auto value = random_bytes(size, 2);
  for (std::size_t i = 0; i < n; ++i)
    (void)store->set(l3_pool::kv_page, numbered_key('k', i), value);
  store.reset();  // closed and opened again: every value is checked on its first read
  store = open_store(dir / "db", direct, verify);
  std::mt19937_64 rng(7);
  aligned_buffer out(size, 0);
  for (auto _ : st) {
    if (!store->get_into(l3_pool::kv_page, numbered_key('k', rng() % n), out.span()))
      st.SkipWithError("get");
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * size));
  store.reset();
  std::filesystem::remove_all(dir);
}

void BM_FileRead(benchmark::State& st) {
  const auto size = static_cast<std::size_t>(st.range(0));
  const bool direct = st.range(1) != 0;
  const auto dir = bench_dir("fread");
  const std::size_t n = dataset_bytes / size;
  const auto value = random_bytes(size, 2);
  int fd = ::open((dir / "f").c_str(), O_CREAT | O_TRUNC | O_RDWR, 0600);
  for (std::size_t i = 0; i < n; ++i)
    (void)!::write(fd, value.data(), size);
  ::close(fd);
  fd = open_file(dir / "f", O_RDONLY, direct);
  if (fd < 0) {
    st.SkipWithError("open (O_DIRECT refused by this filesystem?)");
    return;
  }
  aligned_buffer out(size, 0);
  std::mt19937_64 rng(7);
  for (auto _ : st) {
    const auto off = static_cast<off_t>((rng() % n) * size);
    if (::pread(fd, out.data, size, off) != static_cast<ssize_t>(size)) st.SkipWithError("read");
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
    keys.push_back(numbered_key('p', i));
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
void io_args(benchmark::internal::Benchmark* b) {
  b->ArgsProduct({{64 << 10, 1 << 20}, {0, 1}})->ArgNames({"bytes", "direct"})->UseRealTime();
}
BENCHMARK(BM_FileWrite)->Apply(io_args);
BENCHMARK(BM_L3Put)->Apply(io_args);
BENCHMARK(BM_FileRead)->Apply(io_args);
BENCHMARK(BM_L3Get)
    ->ArgsProduct({{64 << 10, 1 << 20}, {0, 1}, {0, 1}})
    ->ArgNames({"bytes", "direct", "verify"})
    ->UseRealTime();
BENCHMARK(BM_PrefetchRead)->UseRealTime();
BENCHMARK(BM_Memcpy)->Arg(64 << 10)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_L2PageCopy)->Arg(64 << 10)->Arg(1 << 20)->UseRealTime();

}  // namespace
