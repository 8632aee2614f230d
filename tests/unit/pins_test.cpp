// Pins (cmd::pin / cmd::unpin, request_manager::pin): a cached prefix held on the device
// without a request. A pin holds the resumable prefix through any eviction until it is
// unpinned, its TTL ends or the session closes; it is refused past the instance's budget
// (half its KV pool), past 4096 pins a session or with a TTL over 7 days; nothing cached
// is no pin. The sessions of an instance share the budget.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "actors/scheduler/command_executor.hpp"
#include "actors/scheduler/instance_config.hpp"
#include "tests/support/commands.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/tree_fixture.hpp"

namespace hc::test {
namespace {

instance_spec small_spec() {
  instance_spec s;
  s.model_id = "pins";
  s.kv_tokens = 512;
  s.ssm_slots = 16;
  s.request_rows = 8;
  return s;
}

/// A session's request table (no_buffer) on `cache`, run on a manual clock.
struct session {
  session(radix_cache& c, std::shared_ptr<token_budget> pinned = nullptr) : cache(c) {
    request_config rc = request_config_of(small_spec());
    rc.pinned_tokens = std::move(pinned);
    requests = std::make_unique<request_manager>(rc, cache);
  }
  std::vector<command_result> run(std::vector<command> cmds) {
    std::vector<command_result> out;
    execute_batch(*requests, cache, cmds, out, {}, {}, time);
    return out;
  }
  /// Serves a request of prompt `p` to its end: the tree caches it with its state.
  void serve(request_handle h, const std::vector<token_id>& p) {
    for (const command_result& r :
         run({create(h, p), cmd::match{h}, cmd::lock{h}, cmd::alloc_req{h},
              cmd::alloc_kv{h, 0, 0, true}, cmd::append{h, {7}, {}}, cmd::finish{h, 0}}))
      ASSERT_TRUE(r.ok()) << r.error;
  }
  std::uint64_t resumable(const std::vector<token_id>& p) {
    return run({lookup(p, true)})[0].as<res::lookup>().prefix_len;
  }
  res::pin pin(const std::vector<token_id>& p, std::uint64_t ttl_ms = 0) {
    auto r = run({cmd::pin{0, p, {}, ttl_ms}});
    EXPECT_TRUE(r[0].ok()) << r[0].error;
    return r[0].ok() ? r[0].as<res::pin>() : res::pin{};
  }
  radix_cache& cache;
  manual_clock time;
  std::unique_ptr<request_manager> requests;
};

TEST(Pins, APinHoldsItsPrefixThroughEvictionUntilUnpinned) {
  radix_cache cache(cache_config_of(small_spec()));
  session s(cache);
  const auto a = iota_tokens(1, 100), b = iota_tokens(1000, 80);
  s.serve(1, a);
  s.serve(2, b);
  const std::uint64_t len = s.resumable(a);
  ASSERT_GT(len, 0u) << "the served prompt is cached with a state";
  const res::pin p = s.pin(a);
  EXPECT_NE(p.id, 0u);
  EXPECT_EQ(p.pinned_len, len);
  EXPECT_GE(p.kv_matched, p.pinned_len);
  EXPECT_EQ(s.requests->pins(), 1u);
  EXPECT_EQ(s.requests->pinned_tokens(), len);
  const tree_sizes& sz = cache.tree().sizes();
  EXPECT_GE(sz.full_protected, len) << "a pin protects as a request's lock does";
  ASSERT_TRUE(s.requests->check_pool_invariants().ok());

  auto e = s.run({evict(1 << 20, 1 << 10)});
  ASSERT_TRUE(e[0].ok());
  EXPECT_EQ(s.resumable(a), len) << "the pinned prefix survived evicting everything";
  EXPECT_EQ(s.resumable(b), 0u) << "the unpinned one did not";

  auto u = s.run({cmd::unpin{p.id}, cmd::unpin{p.id}, cmd::unpin{p.id + 1}});
  EXPECT_TRUE(u[0].ok()) << u[0].error;
  EXPECT_EQ(u[1].code, errc::not_found) << "released once";
  EXPECT_NE(u[1].error.find("pin " + std::to_string(p.id)), std::string::npos) << u[1].error;
  EXPECT_EQ(u[2].code, errc::not_found) << "never made";
  EXPECT_EQ(s.requests->pins(), 0u);
  EXPECT_EQ(s.requests->pinned_tokens(), 0u);
  (void)s.run({evict(1 << 20, 1 << 10)});
  EXPECT_EQ(s.resumable(a), 0u) << "unpinned, it is evictable again";
  EXPECT_EQ(cache.kv().available(), cache.kv().capacity());
}

TEST(Pins, NothingCachedIsNoPinAndAPinHoldsOnlyTheResumablePrefix) {
  radix_cache cache(cache_config_of(small_spec()));
  session s(cache);
  const res::pin none = s.pin(iota_tokens(1, 50));
  EXPECT_EQ(none.id, 0u);
  EXPECT_EQ(none.pinned_len, 0u);
  EXPECT_EQ(s.requests->pins(), 0u);
  const auto a = iota_tokens(1, 100);
  s.serve(1, a);
  auto longer = a;
  longer.insert(longer.end(), {9, 9, 9, 9, 9});
  const res::pin p = s.pin(longer);
  EXPECT_EQ(p.pinned_len, s.resumable(a)) << "tokens past the cache are not held";
}

TEST(Pins, APinEndsWithItsTtlAndEveryPinWithTheSession) {
  radix_cache cache(cache_config_of(small_spec()));
  {
    session s(cache);
    const auto a = iota_tokens(1, 100), b = iota_tokens(2000, 90);
    s.serve(1, a);
    s.serve(2, b);
    const res::pin brief = s.pin(a, /*ttl_ms=*/50);
    const res::pin lasting = s.pin(b);
    ASSERT_NE(brief.id, 0u);
    ASSERT_NE(lasting.id, 0u);
    s.time.advance(std::chrono::milliseconds(49));
    EXPECT_EQ(s.requests->expire_pins(s.time.now()), 0u) << "not yet";
    s.time.advance(std::chrono::milliseconds(2));
    EXPECT_EQ(s.requests->expire_pins(s.time.now()), 1u);
    EXPECT_EQ(s.requests->pins(), 1u);
    EXPECT_EQ(s.run({cmd::unpin{brief.id}})[0].code, errc::not_found) << "expired";
    (void)s.run({evict(1 << 20, 1 << 10)});
    EXPECT_EQ(s.resumable(a), 0u);
    EXPECT_GT(s.resumable(b), 0u) << "a pin without a TTL stays";
  }  // the session ends: its pins are released
  EXPECT_EQ(cache.tree().sizes().full_protected, 0u);
  EXPECT_TRUE(cache.tree().sanity_check().ok()) << cache.tree().sanity_check().err().message;
}

TEST(Pins, RefusedPastTheBudgetTheCountAndTheLongestTtl) {
  radix_cache cache(cache_config_of(small_spec()));
  auto budget = make_pin_budget(cache);
  EXPECT_EQ(budget->limit(), 256u) << "half the KV pool";
  session s(cache, budget), t(cache, budget);
  const auto a = iota_tokens(1, 200), b = iota_tokens(5000, 200);
  s.serve(1, a);
  t.serve(1, b);
  const res::pin pa = s.pin(a);
  ASSERT_GE(pa.pinned_len, 128u);
  auto over = t.run({cmd::pin{0, b, {}, 0}});
  ASSERT_EQ(over[0].code, errc::out_of_memory) << "the sessions share the instance's budget";
  EXPECT_NE(over[0].error.find("half its KV pool"), std::string::npos) << over[0].error;
  EXPECT_EQ(t.requests->pins(), 0u) << "a refused pin holds nothing";
  EXPECT_EQ(budget->held(), pa.pinned_len);
  ASSERT_TRUE(s.run({cmd::unpin{pa.id}})[0].ok());
  EXPECT_EQ(budget->held(), 0u);
  EXPECT_NE(t.pin(b).id, 0u) << "room again";

  auto ttl = s.run({cmd::pin{0, a, {}, max_pin_ttl_ms + 1}});
  EXPECT_EQ(ttl[0].code, errc::invalid_argument);
  EXPECT_NE(ttl[0].error.find("7 days"), std::string::npos) << ttl[0].error;

  session many(cache, std::make_shared<token_budget>(0));  // unlimited: only the count limits it
  const auto small = iota_tokens(9000, 8);
  many.serve(1, small);
  ASSERT_GT(many.resumable(small), 0u);
  for (std::size_t i = 0; i < max_pins_per_session; ++i)
    ASSERT_NE(many.pin(small).id, 0u) << i;
  auto one_more = many.run({cmd::pin{0, small, {}, 0}});
  EXPECT_EQ(one_more[0].code, errc::out_of_memory);
  EXPECT_NE(one_more[0].error.find("4096 pins"), std::string::npos) << one_more[0].error;
}

}  // namespace
}  // namespace hc::test
