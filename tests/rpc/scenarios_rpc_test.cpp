// spec/cache-semantics.md §8.1 T3 and the three §4.4 lifecycles driven through the whole
// node (client -> Cap'n Proto -> scheduler -> radix_cache actor) as the commands a worker
// sends. Every step also runs in process on a twin cache sized from the same spec; both
// must give the same result field by field, and the spec's figures are asserted on the
// RPC side. Session namespaces are checked here too.
//
// Groups: A. T3   B. §4.4 lifecycles   C. namespaces
#include <gtest/gtest.h>

#include <capnp/message.h>

#include <string>

#include "actors/scheduler/command_executor.hpp"
#include "schema/convert.hpp"
#include "tests/support/commands.hpp"
#include "tests/support/node_fixture.hpp"
#include "tests/support/tree_fixture.hpp"

namespace hc::test {
namespace {

/// Every field of a result but the time it took, as Cap'n Proto's text form of the wire
/// result (a body's kind and every field of it).
std::string describe(command_result r) {
  r.elapsed_ns = 0;
  capnp::MallocMessageBuilder msg;
  auto b = msg.initRoot<wire::CommandResult>();
  wire_convert::put_result(b, r);
  return kj::str(b.asReader()).cStr();
}

/// The request table config the node uses for a spec (donation copies leave with the step).
request_config node_request_config(const instance_spec& s) {
  request_config r = request_config_of(s);
  r.snapshots_in_forward_ops = false;
  return r;
}

/// One session on the node and an in-process twin built from the same spec.
struct twin_session {
  instance_spec spec;
  radix_cache local_cache;
  request_manager local;
  std::unique_ptr<client_session> remote;

  twin_session(client& c, const instance_spec& s)
      : spec(s), local_cache(cache_config_of(s)), local(node_request_config(s), local_cache) {
    auto opened = c.open(s);
    EXPECT_TRUE(opened.ok()) << opened.err().message;
    if (opened.ok()) remote = std::move(*opened);
  }

  /// Runs the step on both; fails the test when any result differs. Returns the RPC side.
  std::vector<command_result> step(std::vector<command> cmds) {
    std::vector<command_result> mine;
    // As the node: a take_ops claims its batch (releases after it wait for its end).
    execute_batch(local, local_cache, cmds, mine,
                  [this](const cmd::take_ops& c, forward_ops&&) { local.stream_claimed(c.batch); });
    auto theirs = remote->step(cmds);
    EXPECT_TRUE(theirs.ok()) << theirs.err().message;
    if (!theirs.ok()) return mine;
    EXPECT_EQ(theirs->size(), mine.size());
    for (std::size_t i = 0; i < std::min(mine.size(), theirs->size()); ++i)
      EXPECT_EQ(describe((*theirs)[i]), describe(mine[i]))
          << "command " << i << " (" << to_string(kind_of(cmds[i])) << ") differs over RPC";
    return *theirs;
  }
  command_result one(command c) { return step({std::move(c)}).at(0); }
  /// The worker's forward of `batch` (begin and end fences); the twin hears the same
  /// reports the node's stream sends.
  void forward(std::uint64_t batch) {
    auto b = remote->begin_forward(batch);
    EXPECT_TRUE(b.ok()) << b.err().message;
    status e = remote->end_forward(batch);
    EXPECT_TRUE(e.ok()) << e.err().message;
    local.stream_claimed(batch);
    local.stream_ended(batch);
  }
};

struct ScenariosRpc : node_fixture {
  std::unique_ptr<client> c;
  void SetUp() override {
    node_fixture::SetUp();
    c = connect();
    ASSERT_TRUE(c);
  }
};

void expect_ok(const command_result& r) {
  EXPECT_TRUE(r.ok()) << r.error;
}

// ---- A. T3 test_mamba_radix_cache_1 ------------------------------------------------------
// The dummy requests of T3 become requests that skip the match (prefix 0, so the whole key's
// KV is allocated and the duplicates are freed at insert, as in T3); tree matches without a
// request are `lookup` commands.
TEST_F(ScenariosRpc, T3RadixCacheTraceGivesTheSpecFigures) {
  instance_spec s;
  s.model_id = "t3";
  s.kv_tokens = 128;
  s.ssm_slots = 20;
  s.chunk_size = 64;
  s.request_rows = 10;
  s.overlap = false;
  s.strat = strategy::no_buffer;
  twin_session t(*c, s);
  ASSERT_TRUE(t.remote);

  auto insert = [&](request_handle h, std::vector<token_id> key) {
    const std::size_t len = key.size();
    auto r = t.step(
        {create(h, std::move(key)), cmd::alloc_req{h}, cmd::alloc_kv{h, 0, len}, cmd::finish{h}});
    for (const auto& one : r)
      expect_ok(one);
    return r;
  };
  auto r1 = insert(1, toks({1, 2, 3}));
  EXPECT_EQ(r1[1].as<res::alloc_req>().working, 1);
  EXPECT_EQ(r1[2].as<res::alloc_kv>().indices, (std::vector<kv_index>{1, 2, 3}));
  EXPECT_EQ(r1[3].as<res::finish>().cached_len, 3u);
  EXPECT_FALSE(r1[3].as<res::finish>().mamba_exist);
  EXPECT_EQ(insert(2, toks({1, 2, 3, 4, 5, 6, 7}))[1].as<res::alloc_req>().working, 2);
  auto r3 = insert(3, toks({10, 11, 12}));
  EXPECT_EQ(r3[2].as<res::alloc_kv>().indices, (std::vector<kv_index>{11, 12, 13}));
  auto r4 = insert(4, toks({1, 2, 3, 4, 5, 60, 70}));
  EXPECT_EQ(r4[2].as<res::alloc_kv>().indices, (std::vector<kv_index>{14, 15, 16, 17, 18, 19, 20}));
  const pool_state& p4 = r4[3].pools;
  EXPECT_EQ(p4.kv_avail, 116u);
  EXPECT_EQ(p4.slots_avail, 16u);
  EXPECT_EQ(p4.full_evictable, 12u);
  EXPECT_EQ(p4.mamba_evictable, 4u);

  // 5. evict one token: leaf [10,11,12] goes whole.
  auto e5 = t.one(evict(1, 0));
  EXPECT_EQ(e5.as<res::evict>().tokens_evicted, 3u);
  EXPECT_EQ(e5.pools.kv_avail, 119u);
  EXPECT_EQ(e5.pools.slots_avail, 17u);
  // 6. evict one slot: internal [1,2,3] becomes a tombstone.
  auto e6 = t.one(evict(0, 1));
  EXPECT_EQ(e6.as<res::evict>().tokens_evicted, 0u);
  EXPECT_EQ(e6.as<res::evict>().mamba_evicted, 1u);
  EXPECT_EQ(e6.pools.slots_avail, 18u);
  // 7-9 matches.
  auto m7 = t.one(lookup(toks({1, 2, 3, 4, 5}))).as<res::lookup>();
  EXPECT_TRUE(m7.indices.empty());
  EXPECT_EQ(m7.node_slot, no_slot);
  auto m8 = t.one(lookup(toks({1, 2, 3, 4, 5, 60, 70}))).as<res::lookup>();
  EXPECT_EQ(m8.indices, (std::vector<kv_index>{1, 2, 3, 7, 8, 19, 20}));
  EXPECT_EQ(m8.node_slot, 4);
  auto m9 = t.one(lookup(toks({1, 2, 3, 4, 5, 6, 7}))).as<res::lookup>();
  EXPECT_EQ(m9.indices, (std::vector<kv_index>{1, 2, 3, 7, 8, 9, 10}));
  EXPECT_EQ(m9.node_slot, 2);
  // The same lookup for a router: the lengths and the slot, no ids.
  auto m9_lengths = t.one(lookup(toks({1, 2, 3, 4, 5, 6, 7}), /*without_indices=*/true));
  EXPECT_TRUE(m9_lengths.as<res::lookup>().indices.empty());
  EXPECT_EQ(m9_lengths.as<res::lookup>().prefix_len, 7u);
  EXPECT_EQ(m9_lengths.as<res::lookup>().kv_matched, 7u);
  EXPECT_EQ(m9_lengths.as<res::lookup>().node_slot, 2);
  // 10. evict one slot: the matches made [6,7] more recent, so leaf [60,70] goes.
  auto e10 = t.one(evict(0, 1));
  EXPECT_EQ(e10.as<res::evict>().mamba_evicted, 1u);
  EXPECT_EQ(e10.pools.kv_avail, 121u);
  EXPECT_EQ(e10.pools.slots_avail, 19u);
  // 11.
  auto m11 = t.one(lookup(toks({1, 2, 3, 4, 5, 60, 70})));
  EXPECT_TRUE(m11.as<res::lookup>().indices.empty());
  // 12. req9 matches [1..7] with COW: source slot 2, new working slot 5.
  auto m12 = t.step({create(9, toks({1, 2, 3, 4, 5, 6, 7, 99})), cmd::match{9}});
  const auto& m = m12[1].as<res::match>();
  EXPECT_EQ(m.prefix_len, 7u);
  EXPECT_EQ(m.node_slot, 2);
  EXPECT_EQ(m.working, 5);
  EXPECT_TRUE(t.one(cmd::check{/*full=*/false}).as<res::check>().sanity);
}

// ---- B. §4.4 lifecycles ------------------------------------------------------------------
// Empty tree, page 1, C 64, interval 256, slots [1..10]; one request, 200-token prompt, no
// prefix hit, 99 decode steps (kv_committed_len 299).
struct LifecycleRpc : ScenariosRpc {
  static constexpr request_handle h = 7;
  std::unique_ptr<twin_session> t;

  void open(strategy st, bool overlap) {
    instance_spec s;
    s.model_id = "lifecycle-" + std::string(to_string(st));
    s.kv_tokens = 4096;
    s.ssm_slots = 10;
    s.chunk_size = 64;
    s.track_interval = 256;
    s.request_rows = 4;
    s.strat = st;
    s.overlap = overlap;
    t = std::make_unique<twin_session>(*c, s);
    ASSERT_TRUE(t->remote);
  }
  /// create, match (no hit), lock, alloc_req, alloc_kv(0, 200): returns alloc_req's result.
  res::alloc_req admit() {
    auto r = t->step({create(h, iota_tokens(1000, 200)), cmd::match{h}, cmd::lock{h},
                      cmd::alloc_req{h}, cmd::alloc_kv{h, 0, 200}});
    for (const auto& one : r)
      expect_ok(one);
    EXPECT_EQ(r[1].as<res::match>().prefix_len, 0u);
    return r[3].as<res::alloc_req>();
  }
  command take_ops(std::uint64_t batch) { return cmd::take_ops{{h}, batch}; }
  /// One decode step per RPC from the row's length + 1 to `to`; returns prepare_decode's
  /// result of the last step.
  res::prepare_decode decode(std::size_t from, std::size_t to) {
    res::prepare_decode last;
    for (std::size_t len = from; len <= to; ++len) {
      auto r =
          t->step({cmd::alloc_kv{h, len - 1, 1}, cmd::prepare_decode{h}, cmd::process_decode{h}});
      for (const auto& one : r)
        expect_ok(one);
      if (r[1].ok()) last = r[1].as<res::prepare_decode>();
    }
    return last;
  }
  void finish() {
    auto r = t->step({cmd::append{h, iota_tokens(5000, 99), {}}, cmd::finish{h}});
    expect_ok(r[0]);
    expect_ok(r[1]);
  }
  /// (length, slot) of the tree states on the request's path, by lookup.
  std::vector<std::pair<std::size_t, slot_id>> tree_states() {
    std::vector<std::pair<std::size_t, slot_id>> out;
    const std::vector<token_id> all = cat(iota_tokens(1000, 200), iota_tokens(5000, 99));
    for (std::size_t len : {192u, 200u, 256u, 299u}) {
      auto r = t->one(lookup({all.begin(), all.begin() + long(len)})).as<res::lookup>();
      if (r.prefix_len == len && r.node_slot != no_slot) out.emplace_back(len, r.node_slot);
    }
    return out;
  }
  /// The working slot the next admitted request gets: the head of the free list.
  slot_id next_free_slot() {
    auto r = t->step({create(99, iota_tokens(1, 4)), cmd::alloc_req{99}});
    expect_ok(r[1]);
    return r[1].as<res::alloc_req>().working;
  }
};
using states = std::vector<std::pair<std::size_t, slot_id>>;

TEST_F(LifecycleRpc, ExtraBufferEagerOverlap) {
  open(strategy::extra_buffer, true);
  auto a = admit();
  EXPECT_EQ(a.working, 1);
  EXPECT_EQ(a.pingpong, (std::array<slot_id, 2>{2, 3}));
  auto ex = t->one(cmd::prepare_extend{h, 0, 200}).as<res::prepare_extend>();
  EXPECT_TRUE(ex.mask);
  EXPECT_EQ(ex.track_slot, 2);
  auto ops = t->one(take_ops(1));
  EXPECT_EQ(ops.as<res::take_ops>().clears, 1u);
  t->forward(1);
  auto u = t->one(cmd::cache_unfinished{h, 200});
  EXPECT_EQ(u.as<res::cache_unfinished>().protected_len, 192u);
  EXPECT_EQ(u.as<res::cache_unfinished>().node_slot, 2);
  EXPECT_EQ(u.pools.full_protected, 192u);
  decode(201, 255);
  auto d = decode(256, 256);
  EXPECT_TRUE(d.mask);
  EXPECT_EQ(d.track_slot, 3);
  decode(257, 299);
  finish();
  EXPECT_EQ(tree_states(), (states{{192, 2}, {256, 3}}));
  EXPECT_EQ(next_free_slot(), 5);
}

TEST_F(LifecycleRpc, ExtraBufferLazy) {
  open(strategy::extra_buffer_lazy, true);
  auto a = admit();
  EXPECT_EQ(a.working, 1);
  EXPECT_EQ(a.pingpong, (std::array<slot_id, 2>{2, no_slot}));
  auto ex = t->one(cmd::prepare_extend{h, 0, 200});
  EXPECT_EQ(ex.as<res::prepare_extend>().track_slot, 2);
  expect_ok(t->one(cmd::cache_unfinished{h, 200}));
  decode(201, 255);
  auto d = decode(256, 256);
  EXPECT_EQ(d.track_slot, 4) << "lazy pre-allocation took slot 4 at the boundary";
  decode(257, 299);
  finish();
  EXPECT_EQ(tree_states(), (states{{192, 2}, {256, 4}}));
  EXPECT_EQ(next_free_slot(), 5);
}

TEST_F(LifecycleRpc, NoBufferWithoutOverlap) {
  open(strategy::no_buffer, false);
  auto a = admit();
  EXPECT_EQ(a.working, 1);
  EXPECT_FALSE(a.pingpong.has_value());
  auto u = t->one(cmd::cache_unfinished{h, 200}).as<res::cache_unfinished>();
  EXPECT_EQ(u.protected_len, 200u);
  EXPECT_EQ(u.node_slot, 2);
  auto ops = t->one(take_ops(1)).as<res::take_ops>();
  EXPECT_EQ(ops.snapshots, 0u) << "the node ran the copy W -> donated after the step";
  EXPECT_EQ(ops.clears, 1u);
  t->forward(1);
  decode(201, 299);
  finish();
  EXPECT_EQ(tree_states(), (states{{200, 2}, {299, 1}}));
  EXPECT_EQ(next_free_slot(), 3);
}

// ---- C. namespaces -----------------------------------------------------------------------
TEST_F(ScenariosRpc, SessionsShareThePrefixesOfTheirNamespaceOnly) {
  auto open_ns = [&](const std::string& ns) {
    instance_spec s = small_spec("ns-model");
    s.ns = ns;
    auto o = c->open(s);
    EXPECT_TRUE(o.ok()) << o.err().message;
    return std::move(*o);
  };
  auto a = open_ns("lora-a");
  auto a2 = open_ns("lora-a");
  auto b = open_ns("lora-b");
  auto plain = open_ns("");
  const std::vector<command> cache_one{create(1, iota_tokens(50, 16)), cmd::alloc_req{1},
                                       cmd::alloc_kv{1, 0, 16}, cmd::finish{1}};
  auto r = a->step(cache_one);
  ASSERT_TRUE(r.ok());
  for (const auto& one : *r)
    ASSERT_TRUE(one.ok()) << one.error;
  const std::vector<command> look{lookup(iota_tokens(50, 16))};
  auto prefix_in = [&](client_session& s) {
    auto l = s.step(look);
    EXPECT_TRUE(l.ok());
    return l.ok() ? (*l)[0].as<res::lookup>().prefix_len : 999u;
  };
  EXPECT_EQ(prefix_in(*a2), 16u) << "same namespace, other session: shared";
  EXPECT_EQ(prefix_in(*b), 0u) << "other namespace: isolated";
  EXPECT_EQ(prefix_in(*plain), 0u) << "default namespace: isolated";
}

}  // namespace
}  // namespace hc::test
