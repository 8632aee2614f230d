// Pins over RPC (Command.pin / unpin): a session keeps a prompt's cached prefix on the
// device while other sessions of the instance evict everything; a pin ends with its TTL
// at the instance's next step, with unpin, or with its session (close or a dropped
// connection); `stats` and `inspect` count what pins hold.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "gpu/shm_region.hpp"
#include "tests/support/commands.hpp"
#include "tests/support/inspect_until.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/node_fixture.hpp"
#include "tests/support/tree_fixture.hpp"

namespace hc::test {
namespace {

struct PinsRpc : node_fixture {
  manual_clock time;
  void SetUp() override {
    clock_for_node = &time;
    node_fixture::SetUp();
  }
};

/// Serves `prompt` as request h to its end: the tree caches it with its state.
void serve(client_session& s, request_handle h, const std::vector<token_id>& prompt) {
  auto r = s.step(std::vector<command>{create(h, prompt), cmd::match{h}, cmd::alloc_req{h},
                                       cmd::alloc_kv{h, 0, 0, true}, cmd::finish{h, 0}});
  ASSERT_TRUE(r.ok()) << r.err().message;
  for (const command_result& x : *r)
    ASSERT_TRUE(x.ok()) << x.error;
}

std::uint64_t resumable(client_session& s, const std::vector<token_id>& prompt) {
  auto r = s.step(std::vector<command>{lookup(prompt, true)});
  EXPECT_TRUE(r.ok() && (*r)[0].ok());
  return r.ok() && (*r)[0].ok() ? (*r)[0].as<res::lookup>().prefix_len : 0;
}

std::map<std::string, double> stats_of(client& c) {
  auto s = c.stats();
  EXPECT_TRUE(s.ok()) << s.err().message;
  std::map<std::string, double> out;
  if (s.ok())
    for (const auto& [k, v] : *s)
      out[k] = v;
  return out;
}

TEST_F(PinsRpc, APinKeepsItsPrefixWhileOtherSessionsEvictUntilItsTtlUnpinOrClose) {
  auto c = connect();
  instance_spec spec = small_spec();
  spec.shared_tokens = 64;
  auto pinner = c->open(spec);
  ASSERT_TRUE(pinner.ok()) << pinner.err().message;
  auto other = c->open(spec);  // the same spec: the same instance
  ASSERT_TRUE(other.ok()) << other.err().message;
  const auto a = iota_tokens(1, 40), b = iota_tokens(1000, 30), d = iota_tokens(5000, 20);
  serve(**pinner, 1, a);
  serve(**pinner, 2, b);
  serve(**other, 3, d);

  // `a` by its list without a TTL, `b` through the token arena for 50 ms.
  auto arena = shm_region::map((*pinner)->pools().tokens_shm, (*pinner)->pools().tokens_bytes);
  ASSERT_TRUE(arena.ok()) << arena.err().message;
  std::copy(b.begin(), b.end(), reinterpret_cast<token_id*>(arena->bytes().data()));
  auto p = (*pinner)->step(
      std::vector<command>{cmd::pin{0, a, {}, 0}, cmd::pin{0, {}, cmd::token_range{0, 30}, 50}});
  ASSERT_TRUE(p.ok()) << p.err().message;
  ASSERT_TRUE((*p)[0].ok()) << (*p)[0].error;
  ASSERT_TRUE((*p)[1].ok()) << (*p)[1].error;
  const res::pin pa = (*p)[0].as<res::pin>(), pb = (*p)[1].as<res::pin>();
  EXPECT_EQ(pa.pinned_len, 40u);
  EXPECT_EQ(pb.pinned_len, 30u);
  EXPECT_NE(pa.id, pb.id);
  auto st = stats_of(*c);
  EXPECT_EQ(st["pins"], 2);
  EXPECT_EQ(st["pinned_tokens"], 70);
  auto doc = nlohmann::json::parse(*c->inspect());
  EXPECT_EQ(doc["instances"][0]["tree"]["pins"], 2) << doc.dump();
  const std::string instance = std::to_string(doc["instances"][0]["tree"]["instance"].get<int>());
  EXPECT_EQ(metric(R"(hybridcache_kv_pool_tokens{instance=")" + instance + R"(",state="pinned"})"),
            70);
  EXPECT_EQ(metric(R"(hybridcache_ssm_pool_slots{instance=")" + instance + R"(",state="pinned"})"),
            2);

  // Another session evicts everything: the pinned prefixes stay, the rest goes.
  auto ev = (*other)->step(std::vector<command>{evict(1 << 20, 1 << 10)});
  ASSERT_TRUE(ev.ok() && (*ev)[0].ok());
  EXPECT_EQ(resumable(**other, a), 40u);
  EXPECT_EQ(resumable(**other, b), 30u);
  EXPECT_EQ(resumable(**other, d), 0u);
  // A pin belongs to its session: another one cannot release it.
  auto theirs = (*other)->step(std::vector<command>{cmd::unpin{pa.id}});
  ASSERT_TRUE(theirs.ok());
  EXPECT_EQ((*theirs)[0].code, errc::not_found) << (*theirs)[0].error;

  // b's TTL ends; the next step of any session of the instance releases it.
  time.advance(std::chrono::milliseconds(51));
  ev = (*other)->step(std::vector<command>{evict(1 << 20, 1 << 10)});
  ASSERT_TRUE(ev.ok() && (*ev)[0].ok());
  EXPECT_EQ(resumable(**other, b), 0u) << "expired, then evicted";
  EXPECT_EQ(resumable(**other, a), 40u);
  st = stats_of(*c);
  EXPECT_EQ(st["pins"], 1);
  EXPECT_EQ(st["pinned_tokens"], 40);
  auto gone = (*pinner)->step(std::vector<command>{cmd::unpin{pb.id}});
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ((*gone)[0].code, errc::not_found) << "an expired pin is released";

  // The pinner closes: its pins go with it.
  ASSERT_TRUE((*pinner)->close().ok());
  st = stats_of(*c);
  EXPECT_EQ(st["pins"], 0);
  EXPECT_EQ(st["pinned_tokens"], 0);
  EXPECT_EQ(st["kv_tokens_protected"], 0);
  ev = (*other)->step(std::vector<command>{evict(1 << 20, 1 << 10)});
  ASSERT_TRUE(ev.ok() && (*ev)[0].ok());
  EXPECT_EQ(resumable(**other, a), 0u);
}

TEST_F(PinsRpc, ADroppedConnectionReleasesItsPinsAndBadPinsAreTypedErrors) {
  auto watcher = connect();
  const auto a = iota_tokens(1, 40);
  {
    auto c = connect();
    auto s = c->open(small_spec());
    ASSERT_TRUE(s.ok()) << s.err().message;
    serve(**s, 1, a);
    auto r = (*s)->step(
        std::vector<command>{cmd::pin{0, a, {}, 0}, cmd::pin{0, a, {}, max_pin_ttl_ms + 1},
                             cmd::pin{0, {}, cmd::token_range{0, 4}, 0}, cmd::unpin{12345}});
    ASSERT_FALSE(r.ok()) << "a range without an arena refuses the whole step";
    EXPECT_EQ(r.err().code, errc::invalid_argument);
    r = (*s)->step(std::vector<command>{cmd::pin{0, a, {}, 0},
                                        cmd::pin{0, a, {}, max_pin_ttl_ms + 1}, cmd::unpin{12345}});
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_TRUE((*r)[0].ok()) << (*r)[0].error;
    EXPECT_EQ((*r)[1].code, errc::invalid_argument);
    EXPECT_EQ((*r)[2].code, errc::not_found);
    EXPECT_EQ(stats_of(*watcher)["pins"], 1);
    c->sever();  // the worker dies without close
  }
  inspect_until(*watcher, [](const auto& doc) {
    return doc["instances"].empty() || doc["instances"][0]["tree"]["pins"] == 0;
  });
  auto st = stats_of(*watcher);
  EXPECT_EQ(st["pins"], 0);
  EXPECT_EQ(st["kv_tokens_protected"], 0);
}

}  // namespace
}  // namespace hc::test
