// The L3 store contract (storage/l3_store.hpp), run against every implementation through
// a traits type: the RocksDB store joins this suite with its own traits.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "storage/loading_store.hpp"
#include "storage/memory_store.hpp"
#include "storage/rocksdb_store.hpp"
#include "storage/value_codec.hpp"
#include "tests/support/temp_dir.hpp"

namespace hc::test {
namespace {

/// The stored form of `key`'s value with one payload byte flipped.
std::vector<std::byte> corrupted(l3_store& s, l3_pool pool, const std::string& key,
                                 std::size_t value_size) {
  std::vector<std::byte> enc;
  std::vector<std::byte> v;
  EXPECT_TRUE(s.get(pool, key, v).ok());
  l3::encode_value(v, enc);
  enc[l3::value_header_bytes + value_size / 2] ^= std::byte{0x40};
  return enc;
}

// Traits: `env` owns what a store needs (a directory), `make` builds a store in it, and
// `corrupt` flips one payload byte of a stored value behind the store's back.
struct memory_traits {
  struct env {
    std::unique_ptr<l3_store> make(std::size_t capacity) {
      return std::make_unique<memory_store>(capacity);
    }
  };
  static void corrupt(l3_store& s, l3_pool pool, const std::string& key, std::size_t value_size) {
    auto enc = corrupted(s, pool, key, value_size);
    ASSERT_TRUE(static_cast<memory_store&>(s).overwrite_stored(pool, key, enc).ok());
  }
};

/// A RocksDB store's directory and configuration: the n-th store made in `dir`.
struct rocksdb_env {
  test::temp_dir dir;
  int made = 0;
  rocksdb_store_config config(std::size_t capacity) {
    rocksdb_store_config cfg;
    cfg.path = dir.sub("db" + std::to_string(made++));
    cfg.capacity_bytes = capacity;
    cfg.segment_bytes = 4096;  // the contract's values span several segments
    return cfg;
  }
};

struct rocksdb_traits {
  struct env : rocksdb_env {
    std::unique_ptr<l3_store> make(std::size_t capacity) {
      auto st = rocksdb_store::open(config(capacity));
      EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.err().message);
      return st.ok() ? std::unique_ptr<l3_store>(std::move(*st)) : nullptr;
    }
  };
  static void corrupt(l3_store& s, l3_pool pool, const std::string& key, std::size_t value_size) {
    auto enc = corrupted(s, pool, key, value_size);
    ASSERT_TRUE(static_cast<rocksdb_store&>(s).overwrite_stored(pool, key, enc).ok());
  }
};

/// The RocksDB store with direct I/O (O_DIRECT reads, flushes and compactions). Skipped,
/// saying why, where the temporary directory's filesystem refuses O_DIRECT (tmpfs).
struct rocksdb_direct_traits {
  struct env : rocksdb_env {
    std::string skip_reason;
    std::unique_ptr<l3_store> make(std::size_t capacity) {
      const std::string probe = dir.sub("odirect-probe");
      const int fd = ::open(probe.c_str(), O_CREAT | O_RDWR | O_DIRECT, 0600);
      if (fd < 0) {
        skip_reason = "O_DIRECT is refused in " + dir.sub("") + ": " + std::strerror(errno);
        return nullptr;
      }
      ::close(fd);
      rocksdb_store_config cfg = config(capacity);
      cfg.direct_io = true;
      auto st = rocksdb_store::open(cfg);
      EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.err().message);
      return st.ok() ? std::unique_ptr<l3_store>(std::move(*st)) : nullptr;
    }
  };
  static void corrupt(l3_store& s, l3_pool pool, const std::string& key, std::size_t value_size) {
    rocksdb_traits::corrupt(s, pool, key, value_size);
  }
};

/// The RocksDB store behind a loading_store (what the node runs when its index is read in
/// the background), once the index is read: it serves by the same contract.
struct loading_rocksdb_traits {
  static inline rocksdb_store* behind = nullptr;  ///< the last store made (for corrupt)
  struct env : rocksdb_env {
    std::unique_ptr<l3_store> make(std::size_t capacity) {
      auto st = rocksdb_store::open_unloaded(config(capacity));
      EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.err().message);
      if (!st.ok()) return nullptr;
      auto holder = std::make_shared<std::unique_ptr<rocksdb_store>>(std::move(*st));
      auto s = std::make_unique<loading_store>(
          capacity, [holder](const std::atomic<bool>&) -> result<std::shared_ptr<l3_store>> {
            auto loaded = rocksdb_store::load(std::move(*holder));
            if (!loaded) return loaded.err();
            behind = loaded->get();
            return std::shared_ptr<l3_store>(std::move(*loaded));
          });
      EXPECT_TRUE(s->wait().ok());
      return s;
    }
  };
  static void corrupt(l3_store& s, l3_pool pool, const std::string& key, std::size_t value_size) {
    auto enc = corrupted(s, pool, key, value_size);
    ASSERT_TRUE(behind->overwrite_stored(pool, key, enc).ok());
  }
};

std::vector<std::byte> value(char fill, std::size_t n) {
  return std::vector<std::byte>(n, static_cast<std::byte>(fill));
}

template <class Traits>
struct StoreContract : ::testing::Test {
  typename Traits::env env;  // declared first: outlives the stores made in it
  std::unique_ptr<l3_store> store = env.make(1 << 20);
  void SetUp() override {
    if constexpr (requires { env.skip_reason; })
      if (!store && !env.skip_reason.empty()) GTEST_SKIP() << env.skip_reason;
    ASSERT_NE(store, nullptr);
  }
};
using implementations =
    ::testing::Types<memory_traits, rocksdb_traits, rocksdb_direct_traits, loading_rocksdb_traits>;
TYPED_TEST_SUITE(StoreContract, implementations);

TYPED_TEST(StoreContract, GetReturnsExactlyWhatWasSet) {
  l3_store& s = *this->store;
  const auto v = value('a', 4096);
  ASSERT_TRUE(s.set(l3_pool::kv_page, "page-1", v).ok());
  std::vector<std::byte> out;
  ASSERT_TRUE(s.get(l3_pool::kv_page, "page-1", out).ok());
  EXPECT_EQ(out, v);
  EXPECT_TRUE(s.exists(l3_pool::kv_page, "page-1"));
  EXPECT_FALSE(s.exists(l3_pool::kv_page, "page-2"));
  EXPECT_EQ(s.get(l3_pool::kv_page, "page-2", out).err().code, errc::not_found);
  EXPECT_TRUE(out.empty());
}

/// Bytes that differ along the value (a block copied to the wrong place shows).
std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::byte>((i * 131 + seed * 17 + (i >> 8)) & 0xFF);
  return v;
}

TYPED_TEST(StoreContract, GetIntoWritesExactlyTheValueIntoTheCallersBuffer) {
  l3_store& s = *this->store;
  // Sizes around the 32 KiB block of the checked copy: under, one, several plus a tail.
  for (std::size_t n :
       {std::size_t{1}, std::size_t{4096}, std::size_t{32 << 10}, std::size_t{(100 << 10) + 7}}) {
    std::string key = "v";  // appended: GCC 12's -Wrestrict false positive on "v" + ...
    key += std::to_string(n);
    const auto v = pattern(n, static_cast<unsigned>(n));
    ASSERT_TRUE(s.set(l3_pool::kv_page, key, v).ok());
    std::vector<std::byte> dst(n, std::byte{0xee});
    ASSERT_TRUE(s.get_into(l3_pool::kv_page, key, dst).ok()) << n;
    EXPECT_EQ(dst, v) << n;
  }
  std::vector<std::byte> dst(16);
  EXPECT_EQ(s.get_into(l3_pool::kv_page, "absent", dst).err().code, errc::not_found);
}

TYPED_TEST(StoreContract, GetIntoABufferOfTheWrongSizeIsAnErrorThatKeepsTheValue) {
  l3_store& s = *this->store;
  ASSERT_TRUE(s.set(l3_pool::ssm_state, "st", pattern(1000, 3)).ok());
  std::vector<std::byte> small(999);
  status r = s.get_into(l3_pool::ssm_state, "st", small);
  EXPECT_EQ(r.err().code, errc::parse_error);
  EXPECT_NE(r.err().message.find("1000 bytes, expected 999"), std::string::npos) << r.err().message;
  std::vector<std::byte> right(1000);
  ASSERT_TRUE(s.get_into(l3_pool::ssm_state, "st", right).ok());
  EXPECT_EQ(right, pattern(1000, 3));
  EXPECT_EQ(s.usage().corrupt, 0u);
}

TYPED_TEST(StoreContract, ACorruptValueIsAMissForGetIntoAndIsDeleted) {
  l3_store& s = *this->store;
  const std::size_t n = (96 << 10) + 5;  // the flipped byte lies in a later block
  ASSERT_TRUE(s.set(l3_pool::kv_page, "p", pattern(n, 9)).ok());
  TypeParam::corrupt(s, l3_pool::kv_page, "p", n);
  std::vector<std::byte> dst(n);
  status r = s.get_into(l3_pool::kv_page, "p", dst);
  EXPECT_EQ(r.err().code, errc::not_found);
  EXPECT_NE(r.err().message.find("corrupt"), std::string::npos) << r.err().message;
  EXPECT_FALSE(s.exists(l3_pool::kv_page, "p")) << "deleted";
  EXPECT_EQ(s.usage().corrupt, 1u);
  EXPECT_EQ(s.usage().values, 0u);
}

TYPED_TEST(StoreContract, EraseByPrefixTakesBothPoolsAndNothingElse) {
  l3_store& s = *this->store;
  ASSERT_TRUE(s.set(l3_pool::kv_page, "ext/a/1", value('1', 64)).ok());
  ASSERT_TRUE(s.set(l3_pool::ssm_state, "ext/a/1", value('2', 64)).ok());
  ASSERT_TRUE(s.set(l3_pool::kv_page, "ext/ab/1", value('3', 64)).ok());
  ASSERT_TRUE(s.set(l3_pool::kv_page, "own/1", value('4', 64)).ok());
  auto n = s.erase_prefix("ext/a/");
  ASSERT_TRUE(n.ok()) << n.err().message;
  EXPECT_EQ(*n, 2u);
  EXPECT_FALSE(s.exists(l3_pool::kv_page, "ext/a/1"));
  EXPECT_FALSE(s.exists(l3_pool::ssm_state, "ext/a/1"));
  EXPECT_TRUE(s.exists(l3_pool::kv_page, "ext/ab/1"));
  EXPECT_TRUE(s.exists(l3_pool::kv_page, "own/1"));
  EXPECT_EQ(s.usage().values, 2u);
  EXPECT_EQ(*s.erase_prefix("ext/a/"), 0u);
}

TYPED_TEST(StoreContract, PoolsDoNotSeeEachOthersKeys) {
  l3_store& s = *this->store;
  ASSERT_TRUE(s.set(l3_pool::kv_page, "h", value('k', 64)).ok());
  EXPECT_FALSE(s.exists(l3_pool::ssm_state, "h"));
  ASSERT_TRUE(s.set(l3_pool::ssm_state, "h", value('s', 32)).ok());
  std::vector<std::byte> out;
  ASSERT_TRUE(s.get(l3_pool::ssm_state, "h", out).ok());
  EXPECT_EQ(out, value('s', 32));
  ASSERT_TRUE(s.get(l3_pool::kv_page, "h", out).ok());
  EXPECT_EQ(out, value('k', 64));
}

TYPED_TEST(StoreContract, SetIsIdempotent) {
  l3_store& s = *this->store;
  ASSERT_TRUE(s.set(l3_pool::kv_page, "p", value('1', 100)).ok());
  const l3_usage before = s.usage();
  ASSERT_TRUE(s.set(l3_pool::kv_page, "p", value('2', 100)).ok());
  std::vector<std::byte> out;
  ASSERT_TRUE(s.get(l3_pool::kv_page, "p", out).ok());
  EXPECT_EQ(out, value('1', 100)) << "the first value stays";
  EXPECT_EQ(s.usage().bytes, before.bytes);
  EXPECT_EQ(s.usage().values, 1u);
}

TYPED_TEST(StoreContract, ACorruptValueIsAMissAndIsDeleted) {
  l3_store& s = *this->store;
  ASSERT_TRUE(s.set(l3_pool::ssm_state, "st", value('x', 256)).ok());
  TypeParam::corrupt(s, l3_pool::ssm_state, "st", 256);
  std::vector<std::byte> out;
  status r = s.get(l3_pool::ssm_state, "st", out);
  EXPECT_EQ(r.err().code, errc::not_found);
  EXPECT_NE(r.err().message.find("corrupt"), std::string::npos) << r.err().message;
  EXPECT_TRUE(out.empty()) << "nothing corrupt is served";
  EXPECT_FALSE(s.exists(l3_pool::ssm_state, "st")) << "deleted";
  EXPECT_EQ(s.usage().corrupt, 1u);
  EXPECT_EQ(s.usage().values, 0u);
}

TYPED_TEST(StoreContract, CapacityEvictsTheLeastRecentlyUsed) {
  const std::size_t each = 1000 + l3::value_header_bytes;
  auto small = this->env.make(3 * each);
  ASSERT_TRUE(small->set(l3_pool::kv_page, "a", value('a', 1000)).ok());
  ASSERT_TRUE(small->set(l3_pool::kv_page, "b", value('b', 1000)).ok());
  ASSERT_TRUE(small->set(l3_pool::kv_page, "c", value('c', 1000)).ok());
  std::vector<std::byte> out;
  ASSERT_TRUE(small->get(l3_pool::kv_page, "a", out).ok());  // a becomes the most recent
  ASSERT_TRUE(small->set(l3_pool::kv_page, "d", value('d', 1000)).ok());
  EXPECT_TRUE(small->exists(l3_pool::kv_page, "a"));
  EXPECT_FALSE(small->exists(l3_pool::kv_page, "b")) << "least recently used goes first";
  EXPECT_TRUE(small->exists(l3_pool::kv_page, "c"));
  EXPECT_TRUE(small->exists(l3_pool::kv_page, "d"));
  const l3_usage u = small->usage();
  EXPECT_LE(u.bytes, u.capacity);
  EXPECT_EQ(u.values, 3u);
  EXPECT_EQ(u.evicted, 1u);
}

TYPED_TEST(StoreContract, BadInputIsATypedError) {
  auto small = this->env.make(1000);
  EXPECT_EQ(small->set(l3_pool::kv_page, "", value('a', 1)).err().code, errc::invalid_argument);
  status big = small->set(l3_pool::kv_page, "big", value('a', 2000));
  EXPECT_EQ(big.err().code, errc::out_of_memory);
  EXPECT_NE(big.err().message.find("capacity"), std::string::npos);
  EXPECT_EQ(small->erase(l3_pool::kv_page, "none").err().code, errc::not_found);
  EXPECT_EQ(small->usage().values, 0u);
}

TYPED_TEST(StoreContract, ExistsManyAnswersInOrder) {
  l3_store& s = *this->store;
  ASSERT_TRUE(s.set(l3_pool::kv_page, "p0", value('0', 8)).ok());
  ASSERT_TRUE(s.set(l3_pool::kv_page, "p2", value('2', 8)).ok());
  const std::vector<std::string> keys{"p0", "p1", "p2"};
  EXPECT_EQ(s.exists_many(l3_pool::kv_page, keys), (std::vector<bool>{true, false, true}));
  ASSERT_TRUE(s.erase(l3_pool::kv_page, "p0").ok());
  EXPECT_EQ(s.exists_many(l3_pool::kv_page, keys), (std::vector<bool>{false, false, true}));
}

TYPED_TEST(StoreContract, ConcurrentWritersAndReadersSeeWholeValues) {
  l3_store& s = *this->store;
  constexpr int per_thread = 200;
  auto writer = [&](char tag) {
    for (int i = 0; i < per_thread; ++i) {
      std::string k{tag};
      k += std::to_string(i);
      EXPECT_TRUE(s.set(l3_pool::kv_page, k, value(static_cast<char>(tag + i % 7), 700)).ok());
      std::vector<std::byte> out;
      if (s.get(l3_pool::kv_page, k, out).ok()) {  // may be evicted by the other writer
        EXPECT_EQ(out, value(static_cast<char>(tag + i % 7), 700)) << k;
      }
    }
  };
  std::thread a(writer, 'a');
  std::thread b(writer, 'k');
  a.join();
  b.join();
  const l3_usage u = s.usage();
  EXPECT_LE(u.bytes, u.capacity);
  EXPECT_EQ(u.values, u.bytes / (700 + l3::value_header_bytes));
}

}  // namespace
}  // namespace hc::test
