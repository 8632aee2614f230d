// hcbench: what the L3 store's garbage collection costs the reads that run beside it
// (BENCHMARKS.md §8.2).
//
//   BM_L3GetDuringCompaction/values:N   a store of N values of 64 bytes under 84-byte keys
//       (SGLang's page keys are 64 hex digits plus the store's prefix) in four segments.
//       A reader thread gets random live values all along. First a quiet window (no
//       compaction), then every other value of the first segment is erased — the segment
//       becomes half dead, which wakes the background compaction — and collect_garbage()
//       runs until that segment's live values are moved. Counters: the reads' p50 / p99.9 /
//       max in each window (µs), the compaction window (ms), the values moved; and the
//       p99.9 / max of each read's time less what the reader spent in the kernel's run queue
//       during it (`..._less_runqueue_us`, from /proc/thread-self/schedstat; absent where
//       that cannot be read): on a box with fewer cores than runnable threads the longest
//       reads are the reader waiting for a core, not for the store (BENCHMARKS.md §8.3).
//       `recency_pending_at_end`: the reads' recency records not yet written when the
//       compaction ends (from 4 × recency_batch on, a get writes a chunk of them itself).
//
// A compaction that takes the store's lock for a walk of the whole index stalls every read
// for that walk; one that lists only the segment's own values, a batch at a time, does not.
// Data under $HC_BENCH_DIR (default /tmp): ~90 MiB at 1 M values.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "storage/rocksdb_store.hpp"
#include "tools/hcbench/call_latencies.hpp"

namespace {

using namespace hc;
using clock_type = std::chrono::steady_clock;

constexpr std::size_t value_bytes = 64;

/// An 84-byte key for value i (a page key's length).
std::string page_key(std::size_t i) {
  std::string k = std::to_string(i);
  k.insert(0, 84 - k.size(), '0');
  return k;
}

/// The time the calling thread has spent runnable but waiting for a core (the second
/// field of its schedstat), in µs; negative where the kernel does not say.
class run_queue_clock {
 public:
  run_queue_clock() : fd_(::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) {}
  ~run_queue_clock() {
    if (fd_ >= 0) ::close(fd_);
  }
  run_queue_clock(const run_queue_clock&) = delete;
  run_queue_clock& operator=(const run_queue_clock&) = delete;
  double waited_us() const {
    char text[128];
    const ssize_t n = fd_ < 0 ? -1 : ::pread(fd_, text, sizeof text - 1, 0);
    if (n <= 0) return -1;
    text[n] = '\0';
    unsigned long long running = 0, waiting = 0;
    if (std::sscanf(text, "%llu %llu", &running, &waiting) != 2) return -1;
    return static_cast<double>(waiting) / 1e3;
  }

 private:
  int fd_;
};

struct window {
  std::vector<double> us;
  std::vector<double> less_runqueue_us;  ///< empty where the run queue's time is unknown
  void add(clock_type::time_point a, clock_type::time_point b, double queued_us) {
    const double t = std::chrono::duration<double, std::micro>(b - a).count();
    us.push_back(t);
    if (queued_us >= 0) less_runqueue_us.push_back(std::max(0.0, t - queued_us));
  }
};

/// Gets random odd-numbered values (never erased) until `stop`, into the window `current`
/// points at (null: not recorded).
void read_until(rocksdb_store& s, std::size_t values, std::atomic<bool>& stop,
                std::atomic<window*>& current, std::atomic<std::size_t>& failures) {
  std::mt19937_64 rng(7);
  std::vector<std::byte> dst(value_bytes);
  const run_queue_clock run_queue;  // this thread's: read around each get, outside its timing
  while (!stop.load(std::memory_order_relaxed)) {
    const std::size_t i = (rng() % (values / 2)) * 2 + 1;
    const std::string k = page_key(i);
    window* w = current.load(std::memory_order_acquire);
    const double q0 = run_queue.waited_us();
    const auto t0 = clock_type::now();
    const status g = s.get_into(l3_pool::kv_page, k, dst);
    const auto t1 = clock_type::now();
    const double q1 = run_queue.waited_us();
    if (!g) failures.fetch_add(1, std::memory_order_relaxed);
    if (w != nullptr) w->add(t0, t1, q0 >= 0 && q1 >= 0 ? q1 - q0 : -1);
  }
}

void report(benchmark::State& st, const char* prefix, window& w) {
  if (w.us.empty()) return;
  const std::string p(prefix);
  st.counters[p + "get_p50_us"] = bench::percentile(w.us, 0.50);
  st.counters[p + "get_p999_us"] = bench::percentile(w.us, 0.999);
  st.counters[p + "get_max_us"] = w.us.back();  // sorted by percentile()
  st.counters[p + "gets"] = static_cast<double>(w.us.size());
  if (w.less_runqueue_us.size() != w.us.size()) return;
  st.counters[p + "get_p999_less_runqueue_us"] = bench::percentile(w.less_runqueue_us, 0.999);
  st.counters[p + "get_max_less_runqueue_us"] = bench::percentile(w.less_runqueue_us, 1.0);
}

void BM_L3GetDuringCompaction(benchmark::State& st) {
  const auto values = static_cast<std::size_t>(st.range(0));
  const char* d = std::getenv("HC_BENCH_DIR");
  const auto dir = std::filesystem::path(d ? d : "/tmp") / "hcbench-l3-gc";
  const std::vector<std::byte> value(value_bytes, std::byte{0x5a});
  for (auto _ : st) {
    std::filesystem::remove_all(dir);
    rocksdb_store_config cfg;
    cfg.path = (dir / "db").string();
    // About four segments: the first one is compacted, the index holds all of them.
    cfg.segment_bytes = std::max<std::uint64_t>(1ull << 20, values * 96 / 4);
    cfg.index_memory_bytes = 0;  // no limit: the index holds every value
    cfg.gc_dead_fraction = 0.4;  // every other value erased: over it
    auto opened = rocksdb_store::open(cfg);
    if (!opened) {
      st.SkipWithError(opened.err().message.c_str());
      return;
    }
    rocksdb_store& s = **opened;
    for (std::size_t i = 0; i < values; ++i)
      if (!s.set(l3_pool::kv_page, page_key(i), value)) {
        st.SkipWithError("set failed");
        return;
      }
    const std::size_t segments = s.segment_count();
    if (segments < 3) {
      st.SkipWithError("too few values for two sealed segments");
      return;
    }
    const std::size_t first_segment = values / segments;  // values in the first, about
    // Touch every value once in a random order: recency order unlike the segments' order,
    // as a store that has served reads for a while has it.
    {
      std::vector<std::size_t> order(values);
      for (std::size_t i = 0; i < values; ++i)
        order[i] = i;
      std::shuffle(order.begin(), order.end(), std::mt19937_64(3));
      std::vector<std::byte> dst(value_bytes);
      for (std::size_t i : order)
        (void)s.get_into(l3_pool::kv_page, page_key(i), dst);
    }

    window quiet, during;
    std::atomic<bool> stop{false};
    std::atomic<window*> current{nullptr};
    std::atomic<std::size_t> failures{0};
    std::thread reader([&] { read_until(s, values, stop, current, failures); });
    current.store(&quiet, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    current.store(&during, std::memory_order_release);
    const std::uint64_t moved_before = s.values_moved();
    const auto t0 = clock_type::now();
    for (std::size_t i = 0; i < first_segment; i += 2)
      (void)s.erase(l3_pool::kv_page, page_key(i));
    s.collect_garbage();  // waits for a pass the background thread began, then runs one
    const auto t1 = clock_type::now();
    const std::size_t pending = s.recency_pending();
    current.store(nullptr, std::memory_order_release);
    stop = true;
    reader.join();
    st.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    st.counters["values"] = static_cast<double>(values);
    st.counters["compaction_ms"] = std::chrono::duration<double, std::milli>(t1 - t0).count();
    st.counters["moved"] = static_cast<double>(s.values_moved() - moved_before);
    st.counters["failed_gets"] = static_cast<double>(failures.load());
    st.counters["recency_pending_at_end"] = static_cast<double>(pending);
    report(st, "quiet_", quiet);
    report(st, "", during);
    if (s.values_moved() == moved_before) st.SkipWithError("nothing was compacted");
  }
  std::filesystem::remove_all(dir);
}

BENCHMARK(BM_L3GetDuringCompaction)
    ->ArgName("values")
    ->Arg(100000)
    ->Arg(1000000)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
