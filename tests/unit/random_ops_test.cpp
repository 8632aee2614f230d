// Randomized lifecycles on small pools: match / lock / admit / extend with tracking /
// cache_unfinished / decode with boundaries / finish / abort / not-admitted, raw tree
// matches, inserts and evictions, for every strategy and several page sizes. After every
// step the tree invariants and the pool identity
//   available + evictable + protected + held == capacity   (KV tokens and SSM slots)
// are checked, and the KV events with state checkpoints (tree_config::state_events),
// applied to a replica as a router would, describe the device tree exactly
// (radix_tree::device_blocks). Pins come and go (unpinned, expired) among them, and
// every pinned prefix stays matchable through any eviction or demote. Fixed seeds; a
// failure names the seed and the step.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "actors/scheduler/request_manager.hpp"
#include "storage/sha256_page_hasher.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/tree_fixture.hpp"

namespace hc::test {
namespace {

struct params {
  strategy strat;
  std::size_t page;
  int pp;
  std::uint64_t seed;
};

enum class stage { created, matched, admitted, prefilled, decoding };

struct live {
  stage st = stage::created;
  std::size_t target_len = 0;  // prompt + decode tokens
};

class RandomOps : public ::testing::TestWithParam<params> {};

/// What a router knows from the events alone: per block hash, how many device pages carry
/// it (namespaces share hashes), how many of them end a node with a state, their parent.
struct event_replica {
  struct entry {
    int pages = 0, checkpoints = 0;
    std::optional<std::int64_t> parent;
    friend bool operator==(const entry&, const entry&) = default;
  };
  std::map<std::int64_t, entry> blocks;

  void apply(const std::vector<kv_event>& events) {
    for (const kv_event& e : events) {
      if (e.type == kv_event::kind::all_blocks_cleared) {
        blocks.clear();
        continue;
      }
      entry& b = blocks[e.block_hash];
      const int d = e.type == kv_event::kind::block_stored ? 1 : -1;
      if (e.group == kv_event::cache_group::full) {
        b.pages += d;
        if (d > 0) b.parent = e.parent_block_hash;
      } else {
        b.checkpoints += d;
      }
      ASSERT_GE(b.pages, 0) << "a page removed that was never stored";
      ASSERT_GE(b.checkpoints, 0) << "a checkpoint removed that was never stored";
      ASSERT_LE(b.checkpoints, b.pages) << "a checkpoint on a page that is not there";
      if (b.pages == 0) blocks.erase(e.block_hash);
    }
  }
  static std::map<std::int64_t, entry> of(const std::vector<device_block>& device) {
    std::map<std::int64_t, entry> out;
    for (const device_block& d : device) {
      entry& b = out[d.hash];
      ++b.pages;
      b.checkpoints += d.checkpoint ? 1 : 0;
      b.parent = d.parent_hash;
    }
    return out;
  }
};

TEST_P(RandomOps, InvariantsHoldAfterEveryStep) {
  const params p = GetParam();
  // C and the interval are multiples of the page (as validate() requires), also at pages
  // that are not powers of two.
  const auto up = [&](std::size_t n) { return (n + p.page - 1) / p.page * p.page; };
  const std::size_t C = up(std::max<std::size_t>(16, p.page));
  cache_config cc{static_cast<std::size_t>(1024) / p.page * p.page * 4, p.page, 24, C};
  cc.enable_events = cc.state_events = true;
  const sha256_page_hasher hasher;
  radix_cache cache(cc, &hasher);
  event_replica replica;
  request_config rc;
  rc.strat = p.strat;
  rc.pp_size = p.pp;
  rc.chunk_size = C;
  rc.track_interval = up(std::max<std::size_t>(32, p.page * 2));
  rc.rows = 8;
  request_manager m(rc, cache);
  std::mt19937_64 rng(p.seed);
  // A few shared "system prompts" so prefixes, splits and branching happen.
  std::vector<std::vector<token_id>> systems;
  for (int g = 0; g < 3; ++g)
    systems.push_back(iota_tokens(10000 * (g + 1), 40 + 17 * static_cast<std::size_t>(g)));
  std::map<request_handle, live> reqs;
  request_handle next_h = 1;
  std::size_t finished = 0, aborted = 0, oom = 0;

  struct pinned {
    std::uint64_t id;
    std::vector<token_id> key;
    std::size_t len;
    clock_ns deadline;
  };
  std::vector<pinned> pins;
  manual_clock time;
  std::size_t pins_made = 0, pins_expired = 0, demote_evicted = 0;
  std::vector<std::vector<token_id>> done_prompts;  ///< of finished requests (demoted later)

  auto fail_safe_abort = [&](request_handle h) {
    ASSERT_TRUE(m.abort(h).ok());
    reqs.erase(h);
    ++aborted;
  };

  for (int step = 0; step < 3000; ++step) {
    SCOPED_TRACE(::testing::Message() << "seed " << p.seed << " step " << step);
    const unsigned action = static_cast<unsigned>(rng() % 100);
    if (action < 12 && reqs.size() < 8) {
      // New request: system prompt + random user tail (sometimes sharing a previous tail).
      std::vector<token_id> prompt = systems[rng() % systems.size()];
      const std::size_t tail = 1 + rng() % 120;
      auto user = iota_tokens(static_cast<int>(100000 + (rng() % 5) * 1000), tail);
      prompt = cat(prompt, user);
      const request_handle h = next_h++;
      ASSERT_TRUE(m.create(h, static_cast<namespace_id>(rng() % 10 == 0), prompt).ok());
      reqs[h] = {stage::created, prompt.size() + rng() % 60};
    } else if (action < 80 && !reqs.empty()) {
      auto it = reqs.begin();
      std::advance(it, static_cast<long>(rng() % reqs.size()));
      const request_handle h = it->first;
      live& L = it->second;
      const request_record* r = m.find(h);
      ASSERT_NE(r, nullptr);
      if (rng() % 150 == 0) {
        if (L.st == stage::created || L.st == stage::matched) {
          ASSERT_TRUE(m.not_admitted(h).ok());
          reqs.erase(it);
        } else {
          fail_safe_abort(h);
        }
      } else if (L.st == stage::created) {
        auto mi = m.match(h);
        if (!mi) {
          ASSERT_EQ(mi.err().code, errc::out_of_memory);
          ASSERT_TRUE(m.not_admitted(h).ok());
          reqs.erase(it);
          ++oom;
        } else {
          ASSERT_TRUE(m.lock(h).ok());
          L.st = stage::matched;
        }
      } else if (L.st == stage::matched) {
        auto a = m.alloc_req(h);
        if (!a) {
          ASSERT_EQ(a.err().code, errc::out_of_memory) << a.err().message;
          fail_safe_abort(h);
          ++oom;
        } else {
          L.st = stage::admitted;
        }
      } else if (L.st == stage::admitted) {
        const std::size_t prefix = r->kv_allocated();
        const std::size_t extend = r->input_len - prefix;
        auto kv = m.alloc_kv(h, prefix, extend);
        if (!kv) {
          ASSERT_EQ(kv.err().code, errc::out_of_memory);
          fail_safe_abort(h);
          ++oom;
        } else {
          ASSERT_TRUE(m.prepare_extend(h, prefix, extend).ok());
          const request_handle batch[] = {h};
          forward_ops ops = m.take_forward_ops(batch);
          for (const slot_copy& c : ops.cows)
            ASSERT_NE(c.src, c.dst);
          auto u = m.cache_unfinished(h, r->input_len);
          if (!u) {
            ASSERT_EQ(u.err().code, errc::out_of_memory) << u.err().message;
            fail_safe_abort(h);
            ++oom;
          } else {
            L.st = stage::decoding;
          }
        }
      } else {
        const std::size_t len = r->kv_allocated();
        if (len >= L.target_len) {
          std::vector<token_id> out =
              iota_tokens(static_cast<int>(500000 + h * 1000), len + 1 - r->tokens.size());
          ASSERT_TRUE(m.append_tokens(h, out).ok());
          done_prompts.push_back(cat(r->tokens, out));
          auto f = m.finish(h);
          ASSERT_TRUE(f.ok()) << f.err().message;
          reqs.erase(it);
          ++finished;
        } else {
          auto kv = m.alloc_kv(h, len, 1);
          if (!kv) {
            fail_safe_abort(h);
            ++oom;
          } else {
            ASSERT_TRUE(m.prepare_decode(h).ok());
            ASSERT_TRUE(m.process_decode(h, false).ok());
          }
        }
      }
    } else if (action < 87) {
      (void)cache.tree().evict(rng() % (4 * p.page + 1), rng() % 3);
    } else if (action < 90) {
      // Demote (not an SGLang call): a prompt's cached path leaves the device, but for what
      // a request or a pin holds or another device branch extends.
      auto key = done_prompts.empty() || rng() % 4 == 0
                     ? cat(systems[rng() % systems.size()], iota_tokens(100000, rng() % 64))
                     : done_prompts[rng() % done_prompts.size()];
      const std::size_t before = cache.tree().sizes().total_tokens();
      const demote_report r = cache.tree().demote_prefix(0, key);
      ASSERT_LE(r.matched_tokens, key.size());
      ASSERT_EQ(r.demoted_tokens + r.deferred_tokens, 0u) << "no host tier";
      ASSERT_EQ(cache.tree().sizes().total_tokens(), before - r.evicted_tokens);
      demote_evicted += r.evicted_tokens;
      for (const pinned& q : pins)
        ASSERT_GE(cache.tree().match(0, q.key, match_ids::leave_out).prefix_len, q.len)
            << "a demote took pin " << q.id << "'s prefix";
    } else if (action >= 97) {
      // Pins (not an SGLang call): a pinned prefix survives any eviction until it is
      // unpinned or its TTL ends; the pool identity counts it as protected.
      time.advance(std::chrono::milliseconds(rng() % 3));
      const std::size_t expired = m.expire_pins(time.now());
      pins_expired += expired;
      std::erase_if(pins, [&](const pinned& q) { return q.deadline <= time.now(); });
      ASSERT_EQ(m.pins(), pins.size()) << expired << " expired";
      if (!pins.empty() && rng() % 2 == 0) {
        const std::size_t i = rng() % pins.size();
        ASSERT_TRUE(m.unpin(pins[i].id).ok());
        ASSERT_EQ(m.unpin(pins[i].id).err().code, errc::not_found) << "released once";
        pins.erase(pins.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        auto key = cat(systems[rng() % systems.size()], iota_tokens(100000, rng() % 64));
        const std::uint64_t ttl = rng() % 3;
        auto r = m.pin(0, key, ttl, time.now());
        if (r) {
          ASSERT_LE(r->pinned_len, r->kv_matched);
          pins_made += r->id != 0;
          if (r->id != 0)
            pins.push_back(
                {r->id, key, r->pinned_len,
                 ttl == 0 ? clock_ns::max() : time.now() + std::chrono::milliseconds(ttl)});
          else
            ASSERT_EQ(r->pinned_len, 0u);
        } else {
          ASSERT_EQ(r.err().code, errc::out_of_memory) << r.err().message;
        }
      }
      if (rng() % 4 == 0) (void)cache.tree().evict(SIZE_MAX, SIZE_MAX);
      for (const pinned& q : pins)
        ASSERT_GE(cache.tree().match(0, q.key, match_ids::leave_out).prefix_len, q.len)
            << "pin " << q.id << " lost its prefix";
      std::uint64_t held = 0;
      for (const pinned& q : pins)
        held += q.len;
      ASSERT_EQ(m.pinned_tokens(), held);
    } else {
      // Raw probe: a match (may split nodes) without COW — first without its ids, as a
      // router's lookup makes it, then with them: the same answer but for the ids, and the
      // same recency (the second walk of the same path leaves the LRU order as it was).
      auto key = cat(systems[rng() % systems.size()], iota_tokens(100000, rng() % 64));
      const match_result quiet = cache.tree().match(0, key, match_ids::leave_out);
      const auto full_order = cache.tree().lru_order(lru_kind::full);
      const auto mamba_order = cache.tree().lru_order(lru_kind::mamba);
      const match_result r = cache.tree().match(0, key);
      ASSERT_TRUE(quiet.indices.empty());
      ASSERT_EQ(r.prefix_len, r.indices.size());
      ASSERT_EQ(quiet.prefix_len, r.prefix_len);
      ASSERT_EQ(quiet.kv_matched, r.kv_matched);
      ASSERT_EQ(quiet.last_node, r.last_node);
      ASSERT_EQ(quiet.last_slot, r.last_slot);
      ASSERT_EQ(quiet.branching, r.branching);
      ASSERT_EQ(quiet.best, r.best);
      ASSERT_EQ(quiet.host_hit_length, r.host_hit_length);
      ASSERT_EQ(quiet.last_host_node, r.last_host_node);
      ASSERT_EQ(quiet.mamba_host_hit, r.mamba_host_hit);
      ASSERT_EQ(cache.tree().lru_order(lru_kind::full), full_order);
      ASSERT_EQ(cache.tree().lru_order(lru_kind::mamba), mamba_order);
    }
    ASSERT_TRUE(cache.tree().check_invariants().ok())
        << cache.tree().check_invariants().err().message;
    ASSERT_TRUE(m.check_pool_invariants().ok()) << m.check_pool_invariants().err().message;
    replica.apply(cache.tree().drain_events());
    ASSERT_EQ(replica.blocks, event_replica::of(cache.tree().device_blocks()))
        << "the events no longer describe the device tree";
  }
  // Drain: everything ends, then the idle checks must hold exactly.
  while (!reqs.empty())
    fail_safe_abort(reqs.begin()->first);
  m.release_pins();
  EXPECT_EQ(m.pins(), 0u);
  EXPECT_GT(pins_made, 2u) << "pins should hold prefixes";
  EXPECT_GT(pins_expired, 0u) << "some pins should expire";
  EXPECT_GT(demote_evicted, 0u) << "some demotes should take a path off the device";
  ASSERT_TRUE(cache.tree().sanity_check().ok()) << cache.tree().sanity_check().err().message;
  ASSERT_TRUE(m.check_pool_invariants().ok());
  EXPECT_EQ(m.held_slots(), 0u);
  EXPECT_GT(finished, 10u) << "the workload should complete requests (aborted " << aborted
                           << ", out of memory " << oom << ")";
  cache.tree().evict(SIZE_MAX, SIZE_MAX);
  replica.apply(cache.tree().drain_events());
  EXPECT_TRUE(replica.blocks.empty()) << "everything evicted: every page and checkpoint removed";
  EXPECT_EQ(cache.kv().available(), cache.kv().capacity());
  EXPECT_EQ(cache.slots().available(), cache.slots().capacity());
}

std::vector<params> all_params() {
  std::vector<params> v;
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    v.push_back({strategy::no_buffer, 1, 1, seed});
    v.push_back({strategy::extra_buffer, 1, 2, seed});
    v.push_back({strategy::extra_buffer, 4, 1, seed});
    v.push_back({strategy::extra_buffer, 16, 2, seed});
    v.push_back({strategy::extra_buffer_lazy, 1, 2, seed});
    v.push_back({strategy::extra_buffer_lazy, 8, 2, seed});
    // Pages that are not powers of two: the allocator divides instead of shifting and
    // checks whole pages id by id (kv_allocator::is_whole_units).
    v.push_back({strategy::extra_buffer, 6, 2, seed});
    v.push_back({strategy::extra_buffer_lazy, 48, 2, seed});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Strategies, RandomOps, ::testing::ValuesIn(all_params()),
                         [](const auto& i) {
                           return std::string(to_string(i.param.strat)) + "_P" +
                                  std::to_string(i.param.page) + "_pp" +
                                  std::to_string(i.param.pp) + "_seed" +
                                  std::to_string(i.param.seed);
                         });

}  // namespace
}  // namespace hc::test
