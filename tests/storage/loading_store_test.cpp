// loading_store (storage/loading_store.hpp): while the store behind it opens, the tier
// misses, refuses sets, keeps erasures for the store and says it is loading; once the
// opener returns, everything goes to the store — erased values never come back; a failed
// opener leaves a store that fails every call with its error; destroying a loading_store
// stops its opener. The opener here waits on a promise the test keeps, so every state is
// reached on purpose, not by timing.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "storage/loading_store.hpp"
#include "storage/memory_store.hpp"

namespace hc::test {
namespace {

std::vector<std::byte> bytes(char fill, std::size_t n) {
  return std::vector<std::byte>(n, static_cast<std::byte>(fill));
}

/// "k<i>", built by appending: GCC 12 warns (-Wrestrict, bug 105329) about "k" + to_string.
std::string numbered_key(int i) {
  std::string k = "k";
  k += std::to_string(i);
  return k;
}

/// A memory store with values "a" and "b" (KV pool), and an opener that returns it once
/// `release` is fulfilled.
struct gated {
  std::shared_ptr<memory_store> behind = std::make_shared<memory_store>(1 << 20);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> saw_stop{false};

  gated() {
    EXPECT_TRUE(behind->set(l3_pool::kv_page, "a", bytes('a', 64)).ok());
    EXPECT_TRUE(behind->set(l3_pool::kv_page, "b", bytes('b', 64)).ok());
  }
  loading_store::opener opener() {
    return [this](const std::atomic<bool>& stop) -> result<std::shared_ptr<l3_store>> {
      while (released.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
        if (stop.load()) {
          saw_stop = true;
          return error{errc::io_error, "stopped"};
        }
      }
      return std::shared_ptr<l3_store>(behind);
    };
  }
};

TEST(LoadingStore, WhileLoadingTheTierMissesRefusesSetsAndSaysSo) {
  gated g;
  loading_store s(12345, g.opener());
  EXPECT_TRUE(s.loading());
  std::vector<std::byte> out;
  const status got = s.get(l3_pool::kv_page, "a", out);
  EXPECT_EQ(got.err().code, errc::not_found);
  EXPECT_NE(got.err().message.find("still reading its index"), std::string::npos);
  std::vector<std::byte> dst(64);
  EXPECT_EQ(s.get_into(l3_pool::kv_page, "a", dst).err().code, errc::not_found);
  EXPECT_FALSE(s.exists(l3_pool::kv_page, "a"));
  const status set = s.set(l3_pool::kv_page, "c", bytes('c', 64));
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.err().code, errc::io_error);
  EXPECT_NE(set.err().message.find("still reading its index"), std::string::npos);
  const auto cleared = s.erase_prefix("a");
  ASSERT_FALSE(cleared.ok());
  EXPECT_NE(cleared.err().message.find("try again"), std::string::npos);
  const l3_usage u = s.usage();
  EXPECT_TRUE(u.loading);
  EXPECT_EQ(u.capacity, 12345u);
  EXPECT_EQ(u.values, 0u);
  EXPECT_TRUE(g.behind->exists(l3_pool::kv_page, "a")) << "nothing reached the store";
  EXPECT_FALSE(g.behind->exists(l3_pool::kv_page, "c"));
  g.release.set_value();
  ASSERT_TRUE(s.wait().ok());
}

TEST(LoadingStore, OnceLoadedEveryCallGoesToTheStore) {
  gated g;
  loading_store s(12345, g.opener());
  g.release.set_value();
  ASSERT_TRUE(s.wait().ok());
  EXPECT_FALSE(s.loading());
  std::vector<std::byte> out;
  ASSERT_TRUE(s.get(l3_pool::kv_page, "a", out).ok());
  EXPECT_EQ(out, bytes('a', 64));
  ASSERT_TRUE(s.set(l3_pool::kv_page, "c", bytes('c', 32)).ok());
  EXPECT_TRUE(g.behind->exists(l3_pool::kv_page, "c"));
  EXPECT_TRUE(s.exists(l3_pool::kv_page, "b"));
  ASSERT_TRUE(s.erase(l3_pool::kv_page, "b").ok());
  EXPECT_FALSE(g.behind->exists(l3_pool::kv_page, "b"));
  const auto cleared = s.erase_prefix("c");
  ASSERT_TRUE(cleared.ok());
  EXPECT_EQ(*cleared, 1u);
  const l3_usage u = s.usage();
  EXPECT_FALSE(u.loading);
  EXPECT_EQ(u.values, g.behind->usage().values);
  EXPECT_EQ(u.capacity, std::uint64_t{1} << 20) << "the store's own usage";
}

TEST(LoadingStore, WhatWasErasedWhileLoadingNeverComesBack) {
  gated g;
  loading_store s(1 << 20, g.opener());
  ASSERT_TRUE(s.erase(l3_pool::kv_page, "a").ok());
  ASSERT_TRUE(s.erase(l3_pool::ssm_state, "b").ok()) << "another pool: b's KV value stays";
  EXPECT_TRUE(g.behind->exists(l3_pool::kv_page, "a")) << "kept until the store is opened";
  g.release.set_value();
  ASSERT_TRUE(s.wait().ok());
  EXPECT_FALSE(s.exists(l3_pool::kv_page, "a"));
  EXPECT_FALSE(g.behind->exists(l3_pool::kv_page, "a"));
  EXPECT_TRUE(s.exists(l3_pool::kv_page, "b"));
}

// Erasures racing with the end of the load: each is either kept and applied, or goes to
// the store — none is lost (run under TSan too).
TEST(LoadingStore, ErasuresRacingTheEndOfTheLoadAreAllApplied) {
  for (int round = 0; round < 20; ++round) {
    gated g;
    for (int i = 0; i < 200; ++i)
      ASSERT_TRUE(g.behind->set(l3_pool::kv_page, numbered_key(i), bytes('k', 8)).ok());
    loading_store s(1 << 20, g.opener());
    std::thread eraser([&] {
      for (int i = 0; i < 200; ++i)
        EXPECT_TRUE(s.erase(l3_pool::kv_page, numbered_key(i)).ok());
    });
    g.release.set_value();
    eraser.join();
    ASSERT_TRUE(s.wait().ok());
    for (int i = 0; i < 200; ++i)
      ASSERT_FALSE(s.exists(l3_pool::kv_page, numbered_key(i))) << "round " << round;
  }
}

TEST(LoadingStore, AFailedOpenFailsEveryCallWithItsError) {
  loading_store s(4096, [](const std::atomic<bool>&) -> result<std::shared_ptr<l3_store>> {
    return error{errc::io_error, "the disk said no"};
  });
  const status w = s.wait();
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.err().message, "the disk said no");
  EXPECT_FALSE(s.loading());
  const status set = s.set(l3_pool::kv_page, "x", bytes('x', 8));
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.err().message.find("the disk said no"), std::string::npos);
  std::vector<std::byte> out;
  EXPECT_EQ(s.get(l3_pool::kv_page, "x", out).err().code, errc::not_found);
  EXPECT_FALSE(s.exists(l3_pool::kv_page, "x"));
  EXPECT_FALSE(s.erase(l3_pool::kv_page, "x").ok());
  EXPECT_FALSE(s.erase_prefix("x").ok());
  EXPECT_FALSE(s.usage().loading) << "nothing is coming";
  EXPECT_EQ(s.usage().values, 0u);
}

TEST(LoadingStore, DestroyingItStopsTheOpener) {
  gated g;  // never released: only the stop flag ends the opener
  { loading_store s(4096, g.opener()); }
  EXPECT_TRUE(g.saw_stop.load());
}

}  // namespace
}  // namespace hc::test
