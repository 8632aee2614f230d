// The RocksDB store against a model, under everything at once: worker threads run random
// puts, gets, erases and prefix clears while the store evicts for its capacity and its
// index limit, compacts segments and writes recency records in the background (a get
// writes some itself when that thread is behind), and the store is closed and opened
// again between rounds.
//
// Each worker owns its keys, so its view of them is sequential: a key is either absent
// (never put, erased, cleared, or found missing) or holds the version it last put. The
// store may evict a value at any time, so a present key may read as missing — after that
// it is absent. What must never happen: a get that returns other bytes than the version
// put, or any value for an absent key (an erased or evicted value coming back), an error
// other than a miss, an index that fails its own check, or a restart that loses or
// revives a value.
//
// Run with buffered and with direct I/O (the latter skipped, saying why, where the
// temporary directory refuses O_DIRECT), and behind a loading_store, as the node serves
// while a large index is read: the workers start while the index loads (the load held
// back a random 0-19 ms). Meanwhile the tier misses and refuses puts and clears, and an
// erase is remembered — an erased value must not come back once the store serves; a miss
// then says nothing of the value. HC_MODEL_SEED (an integer, default 0) varies the
// workers' seeds: a soak is a loop over it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "storage/loading_store.hpp"
#include "storage/rocksdb_store.hpp"
#include "tests/support/temp_dir.hpp"

namespace hc::test {
namespace {

constexpr int workers = 4;
constexpr int keys_per_worker = 48;
/// Operations per worker and round: fewer with direct I/O, where each put waits for the disk.
constexpr int ops_buffered = 20000;
constexpr int ops_direct = 3000;
constexpr int rounds = 4;

std::string key_of(int worker, int k) {
  std::string key = "w";
  key += std::to_string(worker);
  key += "/k";
  key += std::to_string(k);
  return key;
}

/// The bytes of version `v` of `key`: a length and content both depend on them, so a
/// value of another key or version never passes for this one.
std::vector<std::byte> value_of(const std::string& key, std::uint32_t v) {
  std::uint64_t h = std::hash<std::string>{}(key) ^ (0x9e3779b97f4a7c15ull * (v + 1));
  const std::size_t n = 64 + static_cast<std::size_t>(h % 3000);
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    out[i] = static_cast<std::byte>(h >> 56);
  }
  return out;
}

/// What a worker knows of one of its keys: the version it holds, if present.
using model = std::map<std::string, std::optional<std::uint32_t>>;

/// One worker's round of random operations on its own keys; failures are gtest failures
/// (non-fatal, on this thread) and stop the round. `loading` says whether the store may
/// still be loading its index (false once it serves).
void run_worker(l3_store& s, const std::function<bool()>& loading, int worker, int ops,
                std::uint64_t seed, model& m, std::uint32_t& next_version) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> out;
  for (int op = 0; op < ops; ++op) {
    const std::string key = key_of(worker, static_cast<int>(rng() % keys_per_worker));
    std::optional<std::uint32_t>& held = m[key];
    const unsigned dice = static_cast<unsigned>(rng() % 100);
    const bool was_loading = loading();  // before the call: it may have served meanwhile
    if (dice < 35) {  // put: the same bytes again if present (a put keeps the first value)
      const bool fresh = !held;
      if (fresh) held = next_version++;
      const status st = s.set(l3_pool::kv_page, key, value_of(key, *held));
      if (!st && was_loading && st.err().code == errc::io_error) {  // refused while loading
        if (fresh) held.reset();
        continue;
      }
      if (!st) {
        ADD_FAILURE() << key << ": put failed: " << st.err().message;
        return;
      }
    } else if (dice < 80) {  // get, or get_into a buffer of the size the model expects
      const bool into = held && (dice % 2 == 0);
      status st;
      if (into) {
        out.assign(value_of(key, *held).size(), std::byte{0});
        st = s.get_into(l3_pool::kv_page, key, out);
      } else {
        st = s.get(l3_pool::kv_page, key, out);
      }
      if (!st) {
        if (st.err().code != errc::not_found) {
          ADD_FAILURE() << key << ": get failed: " << st.err().message;
          return;
        }
        if (!was_loading) held.reset();  // evicted: absent from now on
        continue;
      }
      if (!held) {
        ADD_FAILURE() << key << ": an absent value was served (erased or evicted, then back)";
        return;
      }
      if (out != value_of(key, *held)) {
        ADD_FAILURE() << key << ": served bytes other than version " << *held;
        return;
      }
    } else if (dice < 90) {  // exists: never true for an absent key
      if (s.exists(l3_pool::kv_page, key) && !held) {
        ADD_FAILURE() << key << ": exists() for an absent value";
        return;
      }
    } else if (dice < 98) {  // erase
      const status st = s.erase(l3_pool::kv_page, key);
      if (!st && st.err().code != errc::not_found) {
        ADD_FAILURE() << key << ": erase failed: " << st.err().message;
        return;
      }
      held.reset();
    } else {  // clear the keys under a prefix of this worker's (k1 clears k1, k10..k19, ...)
      const std::string prefix = key_of(worker, static_cast<int>(rng() % 5));
      const auto cleared = s.erase_prefix(prefix);
      if (!cleared && was_loading && cleared.err().code == errc::io_error) continue;
      if (!cleared) {
        ADD_FAILURE() << prefix << ": clear failed: " << cleared.err().message;
        return;
      }
      for (auto& [k, v] : m)
        if (k.starts_with(prefix)) v.reset();
    }
  }
}

/// Every key of every worker read once: present ones must hold their version (a miss
/// makes them absent: the store may have evicted them); absent ones must stay absent.
/// Returns the keys present.
std::map<std::string, std::uint32_t> read_all(l3_store& s, std::vector<model>& models) {
  std::map<std::string, std::uint32_t> present;
  std::vector<std::byte> out;
  for (model& m : models)
    for (auto& [key, held] : m) {
      const status st = s.get(l3_pool::kv_page, key, out);
      if (!st) {
        EXPECT_EQ(st.err().code, errc::not_found) << key << ": " << st.err().message;
        held.reset();
        continue;
      }
      EXPECT_TRUE(held) << key << ": an absent value was served";
      if (!held) continue;
      EXPECT_EQ(out, value_of(key, *held)) << key << ": bytes other than version " << *held;
      present[key] = *held;
    }
  return present;
}

rocksdb_store_config model_config(const std::string& path, bool direct_io) {
  rocksdb_store_config cfg;
  cfg.path = path;
  cfg.direct_io = direct_io;
  // ~100 of the 192 keys' values fit: puts evict all along. The index limit (90 keys of
  // 8 bytes: the pool byte and "w0/k12") is sometimes the tighter one.
  cfg.capacity_bytes = 160 << 10;
  cfg.index_memory_bytes = 90 * index_bytes_per_value(8);
  cfg.segment_bytes = 32 << 10;  // many segments, compacted in the background
  cfg.gc_dead_fraction = 0.3;
  cfg.recency_batch = 4;  // recency written all along; gets write some at 16 pending
  cfg.flush_interval = std::chrono::milliseconds(20);
  return cfg;
}

enum class io_mode { buffered, direct, loading };

/// The store a round's workers use: the RocksDB store itself, or (io_mode::loading) a
/// loading_store in front of it whose index is still being read.
struct round_store {
  std::unique_ptr<rocksdb_store> plain;
  std::unique_ptr<loading_store> front;
  rocksdb_store* behind = nullptr;  ///< the RocksDB store, once loaded (set by the opener)
  l3_store& calls() { return front ? static_cast<l3_store&>(*front) : *plain; }
  bool loading() const { return front && front->loading(); }
};

struct RocksdbStoreModel : ::testing::TestWithParam<io_mode> {
  /// Opens the store for a round. With io_mode::loading the index is read on the
  /// loading_store's thread after `delay`, while the workers already call.
  static void open_round(const rocksdb_store_config& cfg, io_mode mode,
                         std::chrono::milliseconds delay, round_store& rs) {
    if (mode != io_mode::loading) {
      auto opened = rocksdb_store::open(cfg);
      ASSERT_TRUE(opened.ok()) << opened.err().message;
      rs.plain = std::move(*opened);
      rs.behind = rs.plain.get();
      return;
    }
    auto unloaded = rocksdb_store::open_unloaded(cfg);
    ASSERT_TRUE(unloaded.ok()) << unloaded.err().message;
    auto holder = std::make_shared<std::unique_ptr<rocksdb_store>>(std::move(*unloaded));
    rs.front = std::make_unique<loading_store>(
        cfg.capacity_bytes,
        [holder, delay, &rs](const std::atomic<bool>&) -> result<std::shared_ptr<l3_store>> {
          std::this_thread::sleep_for(delay);
          auto loaded = rocksdb_store::load(std::move(*holder));
          if (!loaded) return loaded.err();
          rs.behind = loaded->get();  // read by the test after wait()
          return std::shared_ptr<l3_store>(std::move(*loaded));
        });
  }
};

TEST_P(RocksdbStoreModel, RandomWorkersAndRestartsNeverServeWrongOrRevivedValues) {
  const io_mode mode = GetParam();
  temp_dir dir;
  if (mode == io_mode::direct) {
    const std::string probe = dir.sub("odirect-probe");
    const int fd = ::open(probe.c_str(), O_CREAT | O_RDWR | O_DIRECT, 0600);
    if (fd < 0)
      GTEST_SKIP() << "O_DIRECT is refused in " << dir.sub("") << ": " << std::strerror(errno);
    ::close(fd);
  }
  const rocksdb_store_config cfg = model_config(dir.sub("l3"), mode == io_mode::direct);
  std::vector<model> models(workers);
  std::vector<std::uint32_t> versions(workers, 1);
  const char* seed_text = std::getenv("HC_MODEL_SEED");
  const std::uint64_t seed = seed_text ? std::strtoull(seed_text, nullptr, 10) : 0;
  SCOPED_TRACE("HC_MODEL_SEED=" + std::to_string(seed));
  std::mt19937_64 delays(seed);
  std::uint64_t compactions_seen = 0;
  std::map<std::string, std::uint32_t> at_close;  // the keys present when the store closed
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    if (round > 0) {  // the restart kept exactly what was there at the close
      auto opened = rocksdb_store::open(cfg);
      ASSERT_TRUE(opened.ok()) << opened.err().message;
      EXPECT_EQ((*opened)->usage().values, at_close.size());
      EXPECT_EQ(read_all(**opened, models), at_close) << "the restart lost or revived values";
    }
    {
      round_store rs;
      ASSERT_NO_FATAL_FAILURE(open_round(cfg, mode, std::chrono::milliseconds(delays() % 20), rs));
      std::vector<std::thread> threads;
      for (int w = 0; w < workers; ++w)
        threads.emplace_back([&, w] {
          const std::uint64_t worker_seed = seed * 1'000'000 + 1000 * std::uint64_t(round) + w;
          run_worker(
              rs.calls(), [&rs] { return rs.loading(); }, w,
              mode == io_mode::direct ? ops_direct : ops_buffered, worker_seed, models[w],
              versions[w]);
        });
      for (std::thread& t : threads)
        t.join();
      if (rs.front) {
        ASSERT_TRUE(rs.front->wait().ok());
      }
      ASSERT_NE(rs.behind, nullptr);
      rocksdb_store& s = *rs.behind;
      compactions_seen += s.values_moved();
      EXPECT_EQ(s.check_index(), "");
      at_close = read_all(rs.calls(), models);
      const l3_usage u = s.usage();
      EXPECT_EQ(u.values, at_close.size()) << "values counted that no key reads";
      EXPECT_LE(u.bytes, u.capacity);
      ASSERT_TRUE(s.close().ok());
    }
    ASSERT_FALSE(HasFailure()) << "stopped at the first round that failed";
  }
  auto opened = rocksdb_store::open(cfg);  // the last round's restart
  ASSERT_TRUE(opened.ok()) << opened.err().message;
  EXPECT_EQ(read_all(**opened, models), at_close) << "the restart lost or revived values";
  EXPECT_EQ((*opened)->check_index(), "");
  // The run is only worth something if the background work it is about happened.
  EXPECT_GT(compactions_seen, 0u) << "no value was moved by a compaction: tune the sizes";
}

INSTANTIATE_TEST_SUITE_P(IO, RocksdbStoreModel,
                         ::testing::Values(io_mode::buffered, io_mode::direct, io_mode::loading),
                         [](const ::testing::TestParamInfo<io_mode>& p) {
                           switch (p.param) {
                             case io_mode::direct:
                               return "Direct";
                             case io_mode::loading:
                               return "WhileItsIndexLoads";
                             default:
                               return "Buffered";
                           }
                         });

}  // namespace
}  // namespace hc::test
