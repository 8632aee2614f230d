// The Store capability (external clients such as SGLang's HiCache storage backend): values
// move through the node-owned arena as segment lists, existence follows the v2 hit
// policies, keys are namespaced by the client's identity, bad input is a typed error, and
// corrupt values are misses.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>

#include <cstring>

#include "storage/external_io.hpp"
#include "storage/memory_store.hpp"
#include "tests/support/faulty_store.hpp"
#include "tests/support/node_fixture.hpp"

namespace hc::test {
namespace {

struct StoreRpc : ::testing::Test {
  null_metrics metrics;
  std::shared_ptr<memory_store> mem = std::make_shared<memory_store>(std::uint64_t{1} << 24);
  std::shared_ptr<faulty_store> faults = std::make_shared<faulty_store>(*mem);  // passes through
  std::unique_ptr<node> n;
  std::unique_ptr<rpc_server> server;
  std::string socket = unique_socket_path();
  std::unique_ptr<client> c;
  std::uint64_t host_memory_limit = 0;  ///< set in a derived fixture's constructor
  std::size_t max_store_keys = 65536;   ///< likewise
  bool with_l3 = true;                  ///< likewise (hybridcached --l3 false: no L3)

  void SetUp() override {
    node_config cfg;
    cfg.metrics = &metrics;
    if (with_l3) cfg.l3 = faults;
    cfg.host_memory_limit = host_memory_limit;
    n = std::make_unique<node>(cfg);
    server = std::make_unique<rpc_server>(*n, metrics);
    rpc_server_config rc;
    rc.unix_path = socket;
    rc.store_arena_bytes = 1 << 20;
    rc.max_stores = 4;
    rc.max_store_keys = max_store_keys;
    ASSERT_TRUE(server->start(rc).ok());
    auto cl = client::connect("unix:" + socket);
    ASSERT_TRUE(cl.ok()) << cl.err().message;
    c = std::move(*cl);
  }
  void TearDown() override {
    c.reset();
    server->stop();
    n->shutdown();
  }
  std::unique_ptr<client_store> open(const std::string& identity) {
    auto s = c->open_store(identity);
    EXPECT_TRUE(s.ok()) << s.err().message;
    return s.ok() ? std::move(*s) : nullptr;
  }
  static void fill(std::span<std::byte> at, std::uint8_t seed) {
    for (std::size_t i = 0; i < at.size(); ++i)
      at[i] = static_cast<std::byte>((seed * 31 + i) & 0xff);
  }
};

constexpr std::size_t page = 4096;

struct StoreRpcSmallHost : StoreRpc {
  StoreRpcSmallHost() { host_memory_limit = 512 << 10; }
};

struct StoreRpcFewKeys : StoreRpc {
  StoreRpcFewKeys() { max_store_keys = 4; }
};

struct StoreRpcNoL3 : StoreRpc {
  StoreRpcNoL3() { with_l3 = false; }
};

// A node without an L3 store refuses a Store when it is asked for one, as a setting of the
// node (invalid_config), not at each call as an outage: a client that takes failed calls for
// an outage (the SGLang backend) would reconnect, and make an arena, every second forever.
TEST_F(StoreRpcNoL3, AStoreIsRefusedWhenOpenedNamingTheSetting) {
  for (int i = 0; i < 6; ++i) {  // more than --max-stores: a refusal holds no arena
    auto s = c->open_store("qwen3-next/tp0of2");
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.err().code, errc::invalid_config);
    EXPECT_NE(s.err().message.find("--l3 false"), std::string::npos) << s.err().message;
  }
  EXPECT_TRUE(c->ping().ok());
}

// A call with more keys than the node takes is refused, naming the limit, which the store
// learns when it opens; set_from / get_into cut their parts there, so a batch of any length
// goes through.
TEST_F(StoreRpcFewKeys, ACallPastTheKeyLimitIsRefusedAndPartsAreCutThere) {
  auto s = open("few");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->max_keys(), 4u);
  constexpr std::size_t count = 10;
  std::vector<std::byte> host(count * page), back(count * page);
  std::vector<store_entry> pages;
  std::vector<std::uintptr_t> from, to;
  for (std::size_t i = 0; i < count; ++i) {
    fill(std::span(host).subspan(i * page, page), static_cast<std::uint8_t>(i));
    pages.push_back({std::string("f").append(std::to_string(i)), {{i * page, page}}});
    from.push_back(reinterpret_cast<std::uintptr_t>(host.data() + i * page));
    to.push_back(reinterpret_cast<std::uintptr_t>(back.data() + i * page));
  }
  auto plain = s->set(store_pool::kv_page, pages);
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.err().code, errc::invalid_argument);
  EXPECT_NE(plain.err().message.find("10 keys in one call; the limit is 4"), std::string::npos)
      << plain.err().message;
  const std::vector<std::string> five = {"a", "b", "c", "d", "e"};
  EXPECT_FALSE(s->exists(five).ok());
  EXPECT_EQ(mem->usage().values, 0u);

  auto w = s->set_from(store_pool::kv_page, pages, from, 0);
  ASSERT_TRUE(w.ok()) << w.err().message;
  EXPECT_EQ(*w, std::vector<bool>(count, true));
  auto r = s->get_into(store_pool::kv_page, pages, to, 0);
  ASSERT_TRUE(r.ok()) << r.err().message;
  EXPECT_EQ(*r, std::vector<bool>(count, true));
  EXPECT_EQ(host, back);
}

// A store's arena is /dev/shm, which is memory: one the host cannot give is refused (as
// an instance's pools are), not taken towards the OOM killer, and nothing is left open.
TEST_F(StoreRpcSmallHost, AnArenaPastTheHostsMemoryIsRefused) {
  for (int i = 0; i < 6; ++i) {  // more than --max-stores: each refusal gives its place back
    auto s = c->open_store("qwen3-next/tp0of2");
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.err().code, errc::out_of_memory);
    EXPECT_NE(s.err().message.find("--store-arena-bytes"), std::string::npos) << s.err().message;
  }
  EXPECT_TRUE(c->ping().ok());
}

TEST_F(StoreRpc, PagesAndAScatteredStateRoundTripThroughTheArena) {
  auto s = open("qwen3-next/tp0of2");
  ASSERT_TRUE(s);
  auto arena = s->arena();
  ASSERT_EQ(arena.size(), 1u << 20);
  std::vector<store_entry> pages;
  for (std::uint8_t i = 0; i < 3; ++i) {
    fill(arena.subspan(i * page, page), i);
    pages.push_back({std::string("h").append(std::to_string(i)), {{i * page, page}}});
  }
  auto w = s->set(store_pool::kv_page, pages);
  ASSERT_TRUE(w.ok()) << w.err().message;
  EXPECT_EQ(*w, (std::vector<bool>{true, true, true}));
  // A Mamba state as two segments (temporal + conv), stored under the last page's key.
  fill(arena.subspan(100000, 1000), 7);
  fill(arena.subspan(200000, 24), 8);
  const store_entry state{"h2", {{100000, 1000}, {200000, 24}}};
  ASSERT_TRUE(s->set(store_pool::ssm_state, std::span(&state, 1)).ok());

  std::vector<std::byte> want_pages(arena.begin(), arena.begin() + 3 * page);
  std::vector<std::byte> want_state(arena.begin() + 100000, arena.begin() + 101000);
  std::vector<std::byte> want_conv(arena.begin() + 200000, arena.begin() + 200024);
  std::memset(arena.data(), 0, arena.size());
  std::vector<store_entry> back;
  for (std::size_t i = 0; i < 3; ++i)
    back.push_back({std::string("h").append(std::to_string(i)), {{500000 + i * page, page}}});
  back.push_back({"missing", {{600000, page}}});
  auto r = s->get(store_pool::kv_page, back);
  ASSERT_TRUE(r.ok()) << r.err().message;
  EXPECT_EQ(*r, (std::vector<bool>{true, true, true, false}));
  EXPECT_TRUE(std::equal(want_pages.begin(), want_pages.end(), arena.begin() + 500000));
  const store_entry state_back{"h2", {{700000, 1000}, {800000, 24}}};
  auto rs = s->get(store_pool::ssm_state, std::span(&state_back, 1));
  ASSERT_TRUE(rs.ok());
  EXPECT_EQ(*rs, std::vector<bool>{true});
  EXPECT_TRUE(std::equal(want_state.begin(), want_state.end(), arena.begin() + 700000));
  EXPECT_TRUE(std::equal(want_conv.begin(), want_conv.end(), arena.begin() + 800000));
  const store_entry wrong_len{"h2", {{700000, 999}}};
  EXPECT_EQ(*s->get(store_pool::ssm_state, std::span(&wrong_len, 1)), std::vector<bool>{false})
      << "a value whose length differs from its segments is not served";
}

// set_from / get_into: values that live in the caller's memory (SGLang's host pool) go
// through the arena in parts, each part's copy beside the node's work on the one before.
TEST_F(StoreRpc, ValuesMoveBetweenTheCallersMemoryAndTheStoreInParts) {
  auto s = open("qwen3-next/tp0of2");
  ASSERT_TRUE(s);
  constexpr std::size_t count = 10;
  std::vector<std::byte> host(count * page), back(count * page);
  for (std::size_t i = 0; i < count; ++i)  // each page its own bytes
    fill(std::span(host).subspan(i * page, page), static_cast<std::uint8_t>(3 + i));
  // Pages one after another in the arena; the last in two segments (as a state is).
  std::vector<store_entry> pages;
  std::vector<std::uintptr_t> from, to;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string key = std::string("p").append(std::to_string(i));
    if (i + 1 < count) {
      pages.push_back({key, {{i * page, page}}});
      from.push_back(reinterpret_cast<std::uintptr_t>(host.data() + i * page));
      to.push_back(reinterpret_cast<std::uintptr_t>(back.data() + i * page));
    } else {
      pages.push_back({key, {{i * page, 100}, {i * page + 100, page - 100}}});
      for (std::size_t at : {std::size_t{0}, std::size_t{100}}) {
        from.push_back(reinterpret_cast<std::uintptr_t>(host.data() + i * page + at));
        to.push_back(reinterpret_cast<std::uintptr_t>(back.data() + i * page + at));
      }
    }
  }
  for (std::uint64_t part : {std::uint64_t{3 * page}, std::uint64_t{0}, std::uint64_t{1}}) {
    SCOPED_TRACE("part_bytes " + std::to_string(part));
    ASSERT_TRUE(s->clear().ok());
    auto w = s->set_from(store_pool::kv_page, pages, from, part);
    ASSERT_TRUE(w.ok()) << w.err().message;
    EXPECT_EQ(*w, std::vector<bool>(count, true));
    EXPECT_EQ(mem->usage().values, count);
    std::fill(back.begin(), back.end(), std::byte{0});
    // One key missing: its bytes in the caller's memory stay as they were.
    auto asked = pages;
    asked[4].key = "missing";
    std::fill(back.begin() + 4 * page, back.begin() + 5 * page, std::byte{0x5a});
    auto r = s->get_into(store_pool::kv_page, asked, to, part);
    ASSERT_TRUE(r.ok()) << r.err().message;
    std::vector<bool> want(count, true);
    want[4] = false;
    EXPECT_EQ(*r, want);
    for (std::size_t i = 0; i < count; ++i) {
      const auto* got = back.data() + i * page;
      if (i == 4)
        EXPECT_TRUE(std::all_of(got, got + page, [](std::byte b) { return b == std::byte{0x5a}; }))
            << "a missing value's memory is not written";
      else
        EXPECT_TRUE(std::equal(got, got + page, host.data() + i * page)) << "page " << i;
    }
  }
}

// Values that reuse the same arena range go in parts of their own, which run one after
// another, never side by side — whatever the part size: each value goes in and comes back
// with its own bytes.
TEST_F(StoreRpc, PartsSharingArenaSpaceRunInTurn) {
  auto s = open("m");
  ASSERT_TRUE(s);
  constexpr std::size_t count = 6;
  std::vector<std::byte> host(count * page), back(count * page);
  for (std::size_t i = 0; i < count; ++i)
    fill(std::span(host).subspan(i * page, page), static_cast<std::uint8_t>(9 + i));
  std::vector<store_entry> at_zero;
  std::vector<std::uintptr_t> from, to;
  for (std::size_t i = 0; i < count; ++i) {
    at_zero.push_back({std::string("z").append(std::to_string(i)), {{0, page}}});
    from.push_back(reinterpret_cast<std::uintptr_t>(host.data() + i * page));
    to.push_back(reinterpret_cast<std::uintptr_t>(back.data() + i * page));
  }
  const auto arena = s->arena();
  for (std::uint64_t part : {std::uint64_t{page}, std::uint64_t{0}, std::uint64_t{3 * page}}) {
    SCOPED_TRACE("part_bytes " + std::to_string(part));
    ASSERT_TRUE(s->clear().ok());
    auto w = s->set_from(store_pool::kv_page, at_zero, from, part);
    ASSERT_TRUE(w.ok()) << w.err().message;
    EXPECT_EQ(*w, std::vector<bool>(count, true));
    for (std::size_t i = 0; i < count; ++i) {  // what was stored, read back the plain way
      ASSERT_EQ(*s->get(store_pool::kv_page, std::span(&at_zero[i], 1)), std::vector<bool>{true});
      EXPECT_TRUE(std::equal(arena.begin(), arena.begin() + page, host.begin() + i * page))
          << "value " << i << " was stored with its own bytes";
    }
    std::fill(back.begin(), back.end(), std::byte{0});
    auto r = s->get_into(store_pool::kv_page, at_zero, to, part);
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(*r, std::vector<bool>(count, true));
    EXPECT_EQ(host, back);
  }
}

// Layouts drawn at random — values of one to three segments (some empty) in a small window
// of the arena, so that values often share arena bytes, and part sizes from one value a part
// to no limit: every value is stored with its own bytes and comes back byte for byte.
TEST_F(StoreRpc, RandomLayoutsAndPartSizesRoundTripByteForByte) {
  auto s = open("random");
  ASSERT_TRUE(s);
  std::mt19937_64 rng(20261127);
  auto draw = [&](std::uint64_t lo, std::uint64_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  // One address per segment: where its bytes are in the value's buffer.
  auto addresses = [](const std::vector<store_entry>& entries,
                      std::vector<std::vector<std::byte>>& buffers) {
    std::vector<std::uintptr_t> out;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      std::uint64_t off = 0;
      for (const store_segment& g : entries[i].segments) {
        out.push_back(reinterpret_cast<std::uintptr_t>(buffers[i].data() + off));
        off += g.length;
      }
    }
    return out;
  };
  const auto arena = s->arena();
  for (int round = 0; round < 40; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::size_t count = draw(1, 12);
    std::vector<store_entry> entries;
    std::vector<std::vector<std::byte>> values;  // each value's bytes, its segments in order
    for (std::size_t i = 0; i < count; ++i) {
      store_entry e{"r" + std::to_string(round) + "-" + std::to_string(i), {}};
      const std::size_t segments = draw(1, 3);
      std::uint64_t at = draw(0, 1500), bytes = 0;
      for (std::size_t k = 0; k < segments; ++k) {  // one value's segments never overlap
        const std::uint64_t len = k + 1 == segments && bytes == 0 ? draw(1, 300) : draw(0, 300);
        e.segments.push_back({at, len});
        at += len + draw(0, 64);
        bytes += len;
      }
      if (draw(0, 1) == 1) std::reverse(e.segments.begin(), e.segments.end());
      values.emplace_back(bytes);
      for (auto& b : values.back())
        b = static_cast<std::byte>(draw(0, 255));
      entries.push_back(std::move(e));
    }
    const std::uint64_t choices[] = {0, 1, 200, 700, 1 << 20};
    const std::uint64_t part = choices[draw(0, 4)];
    SCOPED_TRACE("part_bytes " + std::to_string(part));
    ASSERT_TRUE(s->clear().ok());
    auto w = s->set_from(store_pool::kv_page, entries, addresses(entries, values), part);
    ASSERT_TRUE(w.ok()) << w.err().message;
    EXPECT_EQ(*w, std::vector<bool>(count, true));
    for (std::size_t i = 0; i < count; ++i) {  // what was stored, read back the plain way
      ASSERT_EQ(*s->get(store_pool::kv_page, std::span(&entries[i], 1)), std::vector<bool>{true});
      std::vector<std::byte> stored;
      for (const store_segment& g : entries[i].segments)
        stored.insert(stored.end(), arena.begin() + g.offset, arena.begin() + g.offset + g.length);
      EXPECT_EQ(stored, values[i]) << "value " << i << " was stored with its own bytes";
    }
    std::vector<std::vector<std::byte>> back;
    for (const auto& v : values)
      back.emplace_back(v.size());
    auto r = s->get_into(store_pool::kv_page, entries, addresses(entries, back), part);
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(*r, std::vector<bool>(count, true));
    EXPECT_EQ(back, values);
  }
}

TEST_F(StoreRpc, BadAddressesAreRefusedBeforeAnythingMoves) {
  auto s = open("m");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->max_keys(), 65536u) << "the node's limit, as it said";
  std::vector<std::byte> host(2 * page);
  const auto at = reinterpret_cast<std::uintptr_t>(host.data());
  const std::vector<store_entry> two{{"a", {{0, page}}}, {"b", {{page, page}}}};
  auto few = s->set_from(store_pool::kv_page, two, std::vector<std::uintptr_t>{at}, 0);
  ASSERT_FALSE(few.ok());
  EXPECT_EQ(few.err().code, errc::invalid_argument);
  auto null = s->get_into(store_pool::kv_page, two, std::vector<std::uintptr_t>{at, 0}, 0);
  ASSERT_FALSE(null.ok());
  EXPECT_EQ(null.err().code, errc::invalid_argument);
  const std::vector<store_entry> outside{{"c", {{(1u << 20) - 10, page}}}};
  auto o = s->set_from(store_pool::kv_page, outside, std::vector<std::uintptr_t>{at}, 0);
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.err().message.find("outside"), std::string::npos) << o.err().message;
  EXPECT_EQ(mem->usage().values, 0u) << "a refused batch writes nothing";
  EXPECT_TRUE(s->set_from(store_pool::kv_page, {}, {}, 0).ok()) << "no values: nothing to do";
}

// The node refuses a part (here a key it cannot take): the call ends with its error, and
// the parts before it are stored.
TEST_F(StoreRpc, ARefusedPartEndsTheCallWithThePartsBeforeItStored) {
  auto s = open("m");
  ASSERT_TRUE(s);
  std::vector<std::byte> host(3 * page);
  fill(host, 1);
  const auto at = reinterpret_cast<std::uintptr_t>(host.data());
  const std::vector<store_entry> three{
      {"a", {{0, page}}}, {"b", {{page, page}}}, {"", {{2 * page, page}}}};
  auto r = s->set_from(store_pool::kv_page, three, std::vector<std::uintptr_t>{at, at + page, at},
                       2 * page);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().code, errc::invalid_argument) << r.err().message;
  EXPECT_EQ(mem->usage().values, 2u) << "the first part (a, b) was set";
  const std::vector<store_entry> back{{"a", {{0, page}}}, {"b", {{page, page}}}};
  EXPECT_EQ(*s->get(store_pool::kv_page, back), (std::vector<bool>{true, true}));
}

TEST_F(StoreRpc, ExistenceFollowsTheTrailingPagesRule) {
  auto s = open("m/tp0");
  ASSERT_TRUE(s);
  fill(s->arena().first(page), 1);
  std::vector<store_entry> pages;
  for (const char* k : {"a", "b", "c", "d", "f"})
    pages.push_back({k, {{0, page}}});
  ASSERT_TRUE(s->set(store_pool::kv_page, pages).ok());
  for (const char* k : {"b", "d"}) {  // states at 2 and 4 pages
    const store_entry st{k, {{0, 64}}};
    ASSERT_TRUE(s->set(store_pool::ssm_state, std::span(&st, 1)).ok());
  }
  const std::vector<std::string> keys = {"a", "b", "c", "d", "e", "f"};
  const store_sidecar mamba{store_pool::ssm_state, true, 1, ""};
  auto r = s->exists(keys, std::span(&mamba, 1));
  ASSERT_TRUE(r.ok()) << r.err().message;
  EXPECT_EQ(r->kv_hit_pages, 4u) << "e is missing: f does not count";
  EXPECT_EQ(r->restorable_pages, (std::vector<std::uint32_t>{2, 4}));
  const store_sidecar all{store_pool::ssm_state, false, 1, ""};
  auto r2 = s->exists(keys, std::span(&all, 1));
  ASSERT_TRUE(r2.ok());
  EXPECT_TRUE(r2->restorable_pages.empty()) << "ALL_PAGES: page a has no state";
}

// An MLA model's TP ranks share KV pages under one identity, and each stores its own shard
// of the SSM state under the page's key + its suffix: the rule reads those keys.
TEST_F(StoreRpc, ASidecarKeySuffixNamesWhereThePoolsValuesAre) {
  auto s = open("m/mla");
  ASSERT_TRUE(s);
  fill(s->arena().first(page), 2);
  std::vector<store_entry> pages;
  for (const char* k : {"a", "b", "c"})
    pages.push_back({k, {{0, page}}});
  ASSERT_TRUE(s->set(store_pool::kv_page, pages).ok());
  const store_entry rank0{"b@tp0of2", {{0, 64}}}, rank1{"c@tp1of2", {{0, 64}}};
  ASSERT_TRUE(s->set(store_pool::ssm_state, std::span(&rank0, 1)).ok());
  ASSERT_TRUE(s->set(store_pool::ssm_state, std::span(&rank1, 1)).ok());
  const std::vector<std::string> keys = {"a", "b", "c"};
  const auto restorable = [&](std::string suffix) {
    const store_sidecar q{store_pool::ssm_state, true, 1, std::move(suffix)};
    auto r = s->exists(keys, std::span(&q, 1));
    EXPECT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(r->kv_hit_pages, 3u);
    return r->restorable_pages;
  };
  EXPECT_EQ(restorable("@tp0of2"), std::vector<std::uint32_t>{2});
  EXPECT_EQ(restorable("@tp1of2"), std::vector<std::uint32_t>{3});
  EXPECT_TRUE(restorable("").empty()) << "no state under the bare page keys";
  for (const std::string& bad :
       {std::string("@tp\n"), std::string("\x01"), std::string(l3::max_key_suffix + 1, 'x')}) {
    const store_sidecar q{store_pool::ssm_state, true, 1, bad};
    auto r = s->exists(keys, std::span(&q, 1));
    ASSERT_FALSE(r.ok()) << "suffix of " << bad.size() << " bytes";
    EXPECT_EQ(r.err().code, errc::invalid_argument);
    EXPECT_NE(r.err().message.find("suffix"), std::string::npos) << r.err().message;
  }
  const store_sidecar longest{store_pool::ssm_state, true, 1, std::string(l3::max_key_suffix, 'x')};
  EXPECT_TRUE(s->exists(keys, std::span(&longest, 1)).ok()) << "the limit itself is fine";
}

TEST_F(StoreRpc, IdentitiesAndTheNodesOwnKeysNeverMeet) {
  auto a = open("model-a/tp0");
  auto b = open("model-b/tp0");
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->arena().data(), b->arena().data()) << "each store has its own arena";
  fill(a->arena().first(page), 3);
  const store_entry e{"shared-key", {{0, page}}};
  ASSERT_TRUE(a->set(store_pool::kv_page, std::span(&e, 1)).ok());
  EXPECT_EQ(*b->get(store_pool::kv_page, std::span(&e, 1)), std::vector<bool>{false});
  EXPECT_EQ(a->exists(std::vector<std::string>{"shared-key"})->kv_hit_pages, 1u);
  EXPECT_EQ(b->exists(std::vector<std::string>{"shared-key"})->kv_hit_pages, 0u);
  EXPECT_FALSE(mem->exists(l3_pool::kv_page, "shared-key")) << "stored under its namespace";
  EXPECT_TRUE(mem->exists(l3_pool::kv_page, "ext/model-a/tp0/shared-key"));
}

TEST_F(StoreRpc, ACorruptValueIsAMissAndIsDeleted) {
  auto s = open("m");
  ASSERT_TRUE(s);
  fill(s->arena().first(page), 5);
  const store_entry e{"k", {{0, page}}};
  ASSERT_TRUE(s->set(store_pool::kv_page, std::span(&e, 1)).ok());
  ASSERT_TRUE(mem->overwrite_stored(l3_pool::kv_page, "ext/m/k",
                                    std::vector<std::byte>(page + 32, std::byte{1}))
                  .ok());
  EXPECT_EQ(*s->get(store_pool::kv_page, std::span(&e, 1)), std::vector<bool>{false});
  EXPECT_FALSE(mem->exists(l3_pool::kv_page, "ext/m/k"));
}

TEST_F(StoreRpc, BadInputIsATypedErrorNamingTheProblem) {
  auto bad = c->open_store("");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.err().code, errc::invalid_argument);
  auto s = open("m");
  ASSERT_TRUE(s);
  const store_entry outside{"k", {{(1u << 20) - 10, 64}}};
  auto r = s->set(store_pool::kv_page, std::span(&outside, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().code, errc::invalid_argument);
  EXPECT_NE(r.err().message.find("outside"), std::string::npos) << r.err().message;
  const store_entry empty{"k", {}};
  EXPECT_FALSE(s->set(store_pool::kv_page, std::span(&empty, 1)).ok());
  const store_entry no_key{"", {{0, 8}}};
  EXPECT_FALSE(s->get(store_pool::kv_page, std::span(&no_key, 1)).ok());
  EXPECT_EQ(mem->usage().values, 0u) << "a failed batch writes nothing";
}

TEST_F(StoreRpc, ClearErasesOneIdentityOnly) {
  auto a = open("model-a");
  auto b = open("model-b");
  ASSERT_TRUE(a && b);
  fill(a->arena().subspan(0, 64), 1);
  fill(b->arena().subspan(0, 64), 2);
  const store_entry e{"h", {{0, 64}}};
  ASSERT_TRUE(a->set(store_pool::kv_page, std::span(&e, 1)).ok());
  ASSERT_TRUE(a->set(store_pool::ssm_state, std::span(&e, 1)).ok());
  ASSERT_TRUE(b->set(store_pool::kv_page, std::span(&e, 1)).ok());
  auto erased = a->clear();
  ASSERT_TRUE(erased.ok()) << erased.err().message;
  EXPECT_EQ(*erased, 2u);
  const std::string key = "h";
  EXPECT_EQ(a->exists(std::span(&key, 1))->kv_hit_pages, 0u);
  EXPECT_EQ(b->exists(std::span(&key, 1))->kv_hit_pages, 1u);
}

TEST_F(StoreRpc, ALateCallIsCancelledAsATimeoutAndTheClientStaysUsable) {
  auto s = open("m");
  ASSERT_TRUE(s);
  fill(s->arena().subspan(0, page), 3);
  const store_entry e{"k", {{0, page}}};
  ASSERT_TRUE(s->set(store_pool::kv_page, std::span(&e, 1)).ok());
  faults->hold_reads();  // the node's L3 read of the get below blocks until released
  c->set_call_timeout(std::chrono::milliseconds(100));
  const store_entry into{"k", {{page, page}}};
  auto late = s->get(store_pool::kv_page, std::span(&into, 1));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.err().code, errc::timeout) << late.err().message;
  faults->release_reads();
  c->set_call_timeout(std::chrono::milliseconds(0));
  auto again = s->get(store_pool::kv_page, std::span(&into, 1));
  ASSERT_TRUE(again.ok()) << again.err().message;
  EXPECT_EQ(*again, std::vector<bool>{true});
  EXPECT_TRUE(c->ping().ok());
}

// A call's interrupt check is asked while it waits: false lets it go on (here the check
// itself lets the node's read go after three asks), true cancels it as errc::interrupted
// and the client stays usable — how the Python binding lets Ctrl-C through.
TEST_F(StoreRpc, AnInterruptCheckIsAskedWhileACallWaitsAndMayCancelIt) {
  auto s = open("m");
  ASSERT_TRUE(s);
  fill(s->arena().subspan(0, page), 3);
  const store_entry e{"k", {{0, page}}};
  ASSERT_TRUE(s->set(store_pool::kv_page, std::span(&e, 1)).ok());
  const store_entry into{"k", {{page, page}}};

  int asked = 0;
  faults->hold_reads();
  c->set_interrupt_check([&] {
    if (++asked == 3) faults->release_reads();
    return false;
  });
  auto waited = s->get(store_pool::kv_page, std::span(&into, 1));
  ASSERT_TRUE(waited.ok()) << waited.err().message;
  EXPECT_EQ(*waited, std::vector<bool>{true});
  EXPECT_GE(asked, 3);

  faults->hold_reads();
  asked = 0;
  c->set_interrupt_check([&] { return ++asked == 2; });
  auto stopped = s->get(store_pool::kv_page, std::span(&into, 1));
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.err().code, errc::interrupted) << stopped.err().message;
  EXPECT_EQ(asked, 2);
  faults->release_reads();
  c->set_interrupt_check({});
  auto again = s->get(store_pool::kv_page, std::span(&into, 1));
  ASSERT_TRUE(again.ok()) << again.err().message;
  EXPECT_EQ(*again, std::vector<bool>{true});
  EXPECT_TRUE(c->ping().ok());
}

// The node's RPC thread polls a while for an exists to finish (--step-spin-us) and then
// sleeps until the host_storage actor wakes it: an exists that outlasts the poll is
// answered when it ends, and meanwhile the node serves other connections.
TEST_F(StoreRpc, AnExistsThatOutlastsThePollIsAnsweredWhenItEnds) {
  auto s = open("slow");
  ASSERT_TRUE(s);
  fill(s->arena().subspan(0, 2 * page), 4);
  const std::vector<store_entry> e{{"a", {{0, page}}}, {"b", {{page, page}}}};
  ASSERT_TRUE(s->set(store_pool::kv_page, e).ok());
  faults->hold_exists();
  result<store_exists_reply> answer = error{errc::io_error, "not answered"};
  std::thread caller([&] {  // a client belongs to the thread that made it
    auto mine = client::connect("unix:" + socket);
    if (!mine) return void(answer = mine.err());
    auto same = (*mine)->open_store("slow");
    if (!same) return void(answer = same.err());
    answer = (*same)->exists(std::vector<std::string>{"a", "b", "c"});
  });
  for (int i = 0; i < 1000 && faults->exists_calls == 0; ++i)  // a bounded wait (10 s)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GT(faults->exists_calls.load(), 0u) << "the exists never reached the store";
  c->set_call_timeout(std::chrono::seconds(2));
  for (int i = 0; i < 5; ++i) {  // well past the poll (200 µs): the node serves on
    auto pong = c->ping();
    EXPECT_TRUE(pong.ok()) << pong.err().message;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  faults->release_exists();
  caller.join();
  ASSERT_TRUE(answer.ok()) << answer.err().message;
  EXPECT_EQ(answer->kv_hit_pages, 2u);
}

// Strings cross the wire whole: Cap'n Proto's conversion from std::string stops at the
// first NUL, so "k\0a" and "k\0b" were both stored and found as "k" — one key's get read
// another's value. Now the node sees the NUL, and refuses it in a key or an identity.
TEST_F(StoreRpc, AKeyWithANulIsRefusedNotTruncated) {
  auto s = open("nul");
  ASSERT_TRUE(s);
  fill(s->arena().subspan(0, page), 5);
  const store_entry e{std::string("k\0a", 3), {{0, page}}};
  auto put = s->set(store_pool::kv_page, std::span(&e, 1));
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.err().code, errc::invalid_argument) << put.err().message;
  const store_entry plain{"k", {{0, page}}};
  ASSERT_TRUE(s->set(store_pool::kv_page, std::span(&plain, 1)).ok());
  const store_entry other{std::string("k\0b", 3), {{0, page}}};
  auto got = s->get(store_pool::kv_page, std::span(&other, 1));
  ASSERT_FALSE(got.ok()) << "a get of \"k\\0b\" found \"k\"";
  EXPECT_EQ(got.err().code, errc::invalid_argument);
  auto ex = s->exists(std::vector<std::string>{std::string("k\0b", 3)}, {});
  EXPECT_FALSE(ex.ok() && ex->kv_hit_pages > 0) << "exists found \"k\" for \"k\\0b\"";
  auto id = c->open_store(std::string("nul\0other", 9));
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.err().code, errc::invalid_argument);
}

// Each arena holds its bytes of /dev/shm until released: a client that opened stores
// without end once filled /dev/shm and the kernel's OOM killer took the node.
TEST_F(StoreRpc, StoresPastTheLimitAreRefusedUntilOneCloses) {
  std::vector<std::unique_ptr<client_store>> open_now;
  for (int i = 0; i < 4; ++i) {
    auto s = c->open_store("limit");
    ASSERT_TRUE(s.ok()) << s.err().message;
    open_now.push_back(std::move(*s));
  }
  auto more = c->open_store("limit");
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.err().code, errc::out_of_memory);
  EXPECT_NE(more.err().message.find("--max-stores"), std::string::npos) << more.err().message;
  // Another connection counts against the same limit.
  auto other = client::connect("unix:" + socket);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE((*other)->open_store("limit").ok());
  // A released store's arena goes once the node has dropped it (the release is a message
  // of its own): the limit frees up.
  open_now.pop_back();
  bool reopened = false;
  for (int i = 0; i < 1000 && !reopened; ++i) {  // a bounded wait (10 s), not a timing
    reopened = c->open_store("limit").ok();
    if (!reopened) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(reopened);
}

// A client's event loop runs only inside its calls, so its timer's clock stops between
// them: the first call after an idle spell longer than the deadline failed at once as a
// timeout (and was cancelled, sent or not) while the node was idle and well.
TEST_F(StoreRpc, TheFirstCallAfterAnIdleSpellIsNotLate) {
  c->set_call_timeout(std::chrono::milliseconds(300));
  ASSERT_TRUE(c->ping().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  auto r = c->ping();
  EXPECT_TRUE(r.ok()) << r.err().message;
  auto s = open("idle");
  ASSERT_TRUE(s);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  const store_entry e{"k", {{0, page}}};
  auto put = s->set(store_pool::kv_page, std::span(&e, 1));
  EXPECT_TRUE(put.ok()) << put.err().message;
}

}  // namespace
}  // namespace hc::test
