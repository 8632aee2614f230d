// The tiers end to end, in ids and bytes: a request's prefix goes device -> host (backup)
// -> L3 (batched page writes + the SSM state under the node's last page hash); the tree is
// dropped (a restart); a prefetch reserves host pages, checks existence with the trailing-
// page rule, reads pages and then the state, hangs them in the tree as host-only nodes,
// and a load-back brings them to the device — where every byte must equal what a toy
// model recomputes. Fault injection (failed writes and reads, corrupt values, slow reads)
// must only shorten what is restored: nothing corrupt is served, nothing leaks.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "actors/host_storage/host_pools.hpp"
#include "actors/radix_cache/prefetch_planner.hpp"
#include "storage/l3_keys.hpp"
#include "storage/memory_store.hpp"
#include "storage/sha256_page_hasher.hpp"
#include "storage/tier_io.hpp"
#include "storage/value_codec.hpp"
#include "tests/support/faulty_store.hpp"
#include "tests/support/toy_bytes.hpp"
#include "tests/support/tree_fixture.hpp"

namespace hc::test {
namespace {

constexpr std::size_t P = 4, token_bytes = 32, state_bytes = 64;

std::vector<std::byte> state_after(std::span<const token_id> prefix) {
  return test::state_after(prefix, state_bytes);
}

struct pipeline : ::testing::Test {
  sha256_page_hasher hasher;  // first: the cache keeps a pointer to it
  host_pool_sizes sizes = [] {
    host_pool_request r;
    r.device_kv_tokens = 64;
    r.device_slots = 16;
    r.page_size = P;
    r.kv_bytes_per_token = token_bytes;
    r.state_bytes = state_bytes;
    auto s = size_host_pools(r);
    EXPECT_TRUE(s.ok());
    return *s;
  }();
  radix_cache cache{[this] {
                      cache_config c;
                      c.page_size = P;
                      c.kv_tokens = 64;
                      c.slots = 16;
                      c.host_kv_tokens = sizes.kv_tokens;
                      c.host_slots = sizes.slots;
                      c.host_tier.write_through_threshold = 1u << 30;
                      return c;
                    }(),
                    &hasher};
  radix_tree& t = cache.tree();
  host_pools host{sizes, P};
  std::vector<std::byte> device_kv = std::vector<std::byte>((64 + P) * token_bytes);
  std::map<slot_id, std::vector<std::byte>> device_state;
  memory_store mem{1 << 20};
  manual_clock time;
  faulty_store store{mem, &time};
  std::string fp = l3::fingerprint({"toy-hybrid", 0, 1, P* token_bytes, state_bytes});
  prefetch_planner planner{prefetch_config{8}, t, cache.host_kv(), cache.host_slots(), 64};
  std::vector<token_id> K = iota_tokens(100, 48);  // 12 pages; states at 32 and 48 tokens

  std::span<std::byte> dev(kv_index k) {
    return {device_kv.data() + static_cast<std::size_t>(k) * token_bytes, token_bytes};
  }
  void apply(const tier_copy& c) {
    const bool d2h = c.dir == tier_copy::direction::device_to_host;
    for (std::size_t i = 0; i < c.device_kv.size(); ++i) {
      auto d = dev(c.device_kv[i]);
      auto h = host.kv(c.host_kv[i]);
      d2h ? std::memcpy(h.data(), d.data(), token_bytes)
          : std::memcpy(d.data(), h.data(), token_bytes);
    }
    if (c.device_slot != no_slot && c.host_slot != no_slot) {
      auto h = host.state(c.host_slot);
      auto& d = device_state[c.device_slot];
      if (d2h) {
        std::memcpy(h.data(), d.data(), state_bytes);
      } else {
        d.assign(h.begin(), h.end());
      }
    }
  }
  /// The forward of a request: KV and the state at the end, inserted, then backed up.
  node_ref prefill(std::span<const token_id> key, std::size_t prev) {
    std::vector<kv_index> kv = t.match(0, key.first(prev)).indices;
    EXPECT_EQ(kv.size(), prev);
    std::vector<kv_index> fresh;
    EXPECT_TRUE(cache.alloc_kv(prev, prev ? kv.back() : 0, key.size() - prev, fresh).ok());
    for (std::size_t i = 0; i < fresh.size(); ++i)
      fill_kv(dev(fresh[i]), prev + i, key[prev + i]);
    kv.insert(kv.end(), fresh.begin(), fresh.end());
    const slot_id s = cache.slots().alloc_one();
    device_state[s] = state_after(key);
    EXPECT_TRUE(t.insert(0, key, kv, s, prev).ok());
    node_ref n = t.match(0, key).best;
    auto c = t.write_backup(n);
    EXPECT_TRUE(c.ok()) << c.err().message;
    apply(*c);
    EXPECT_TRUE(t.backup_done(n).ok());
    return n;
  }
  std::vector<std::string> keys_of(std::span<const token_id> tokens) {
    std::vector<std::string> keys;
    page_digest prior;
    for (std::size_t i = 0; i + P <= tokens.size(); i += P) {
      prior = hasher.hash_page(i ? &prior : nullptr, tokens.subspan(i, P));
      keys.push_back(l3::page_key(fp, "default", prior));
    }
    return keys;
  }
  /// L3 backup of a backed-up node: its pages in batches, then its state.
  l3::write_report backup_to_l3(node_ref n, std::size_t batch = l3::default_batch_pages) {
    std::vector<std::string> keys;
    for (const page_digest& d : t.node_hashes(n))
      keys.push_back(l3::page_key(fp, "default", d));
    std::vector<std::span<const std::byte>> pages;
    for (std::size_t i = 0; i < keys.size(); ++i)
      pages.push_back(host.kv(n.node->host_value[i * P], P));
    auto r = l3::write_pages(store, keys, pages, batch);
    if (!r.failed && n.node->mamba_host != no_slot) {
      EXPECT_TRUE(store.set(l3_pool::ssm_state, keys.back(), host.state(n.node->mamba_host)).ok());
    }
    return r;
  }
  void store_request() {
    node_ref a = prefill(std::span<const token_id>(K).first(32), 0);
    node_ref b = prefill(K, 32);
    ASSERT_FALSE(backup_to_l3(a).failed);
    ASSERT_FALSE(backup_to_l3(b).failed);
  }
  /// A restart: the tree and both byte tiers are gone, L3 stays.
  void restart() {
    t.reset();
    std::fill(device_kv.begin(), device_kv.end(), std::byte{0});
    device_state.clear();
  }
  struct restored {
    prefetch_planner::finish_result fin;
    std::size_t device_tokens = 0;  ///< prefix usable on the device after load-back
  };
  /// The prefetch of K, then the load-back; checks every restored byte.
  restored prefetch_and_load(std::chrono::milliseconds budget = std::chrono::seconds(10)) {
    restored out;
    auto m = t.match(0, K);
    auto b = planner.begin(m.last_host_node, K);
    EXPECT_TRUE(std::holds_alternative<prefetch_ticket>(b));
    if (!std::holds_alternative<prefetch_ticket>(b)) return out;
    prefetch_ticket tk = std::get<prefetch_ticket>(std::move(b));
    auto keys = keys_of(tk.tokens);
    const std::size_t usable = l3::usable_prefix_pages(store, keys);
    if (auto o = planner.on_exists(tk, usable * P)) {
      out.fin.outcome = *o;
      return out;
    }
    keys.resize(tk.tokens.size() / P);
    std::vector<std::span<std::byte>> dst;
    for (std::size_t i = 0; i < keys.size(); ++i)
      dst.push_back(host.kv(tk.host_kv[i * P], P));
    auto rr =
        l3::read_pages(store, keys, dst, host.state(tk.host_slot), time, time.now() + budget, 2);
    out.fin = planner.finish(tk, 0, rr.pages_read * P, rr.state_read, rr.timed_out);
    auto m2 = t.match(0, K);
    auto lb = t.load_back(m2.best, 1 << 20);
    EXPECT_TRUE(lb.ok());
    std::vector<kv_index> idx = m2.indices;
    if (lb->loaded) {
      for (const tier_copy& c : lb->copies)
        apply(c);
      idx.insert(idx.end(), lb->new_indices.begin(), lb->new_indices.end());
      EXPECT_TRUE(t.load_done(lb->last_node).ok());
    }
    out.device_tokens = idx.size();
    std::vector<std::byte> want(token_bytes);
    for (std::size_t i = 0; i < idx.size(); ++i) {
      fill_kv(want, i, K[i]);
      auto got = dev(idx[i]);
      EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << "KV byte mismatch at " << i;
    }
    if (lb->loaded || lb->slot != no_slot) {
      EXPECT_EQ(device_state.at(lb->slot),
                state_after(std::span<const token_id>(K).first(idx.size())))
          << "state restored from the wrong position";
    }
    return out;
  }
  void TearDown() override {
    auto s = t.sanity_check();
    EXPECT_TRUE(s.ok()) << s.err().message;
    EXPECT_EQ(cache.host_kv().available() + t.host_usage().tokens, cache.host_kv().capacity());
    EXPECT_EQ(cache.host_slots().available() + t.host_usage().slots, cache.host_slots().capacity());
    EXPECT_EQ(planner.occupied_tokens(), 0u);
    std::vector<std::byte> v;
    for (const auto& k : keys_of(K))  // nothing corrupt stays in L3
      if (mem.get(l3_pool::kv_page, k, v).ok()) {
        EXPECT_EQ(v.size(), P * token_bytes);
      }
  }
};

TEST_F(pipeline, APrefixSurvivesARestartThroughL3ByteForByte) {
  store_request();
  restart();
  auto r = prefetch_and_load();
  EXPECT_EQ(r.fin.outcome, prefetch_outcome::completed);
  EXPECT_EQ(r.fin.storage_hit_tokens, 48u);
  EXPECT_EQ(r.device_tokens, 48u);
  EXPECT_EQ(store.state_reads, 1u);
}

TEST_F(pipeline, ExistenceStopsAtTheDeepestPageWithAState) {
  store_request();
  auto keys = keys_of(K);
  ASSERT_TRUE(mem.erase(l3_pool::ssm_state, keys[11]).ok());  // the 48-token state is gone
  EXPECT_EQ(l3::usable_prefix_pages(store, keys), 8u);
  restart();
  auto r = prefetch_and_load();
  EXPECT_EQ(r.fin.outcome, prefetch_outcome::completed) << "everything the store had";
  EXPECT_EQ(r.device_tokens, 32u);
}

TEST_F(pipeline, AFailedBackupBatchIsReportedAndLaterBackupsStillRun) {
  node_ref a = prefill(std::span<const token_id>(K).first(32), 0);
  node_ref b = prefill(K, 32);
  store.fail_writes_after = 6;  // batches of 4 pages: batch 1 fails after 2 of its pages
  auto ra = backup_to_l3(a, 4);
  EXPECT_TRUE(ra.failed);
  EXPECT_EQ(ra.failed_batch, 1u);
  EXPECT_EQ(ra.pages_written, 4u);
  EXPECT_EQ(ra.err.code, errc::io_error);
  store.fail_writes_after = SIZE_MAX;
  EXPECT_FALSE(backup_to_l3(a, 4).failed) << "a failure never stops the next backup";
  EXPECT_FALSE(backup_to_l3(b, 4).failed);
  restart();
  EXPECT_EQ(prefetch_and_load().device_tokens, 48u);
}

TEST_F(pipeline, AFailedReadKeepsThePagesBeforeItAndTheRequestRecomputes) {
  store_request();
  store.fail_reads.insert(keys_of(K)[5]);
  restart();
  auto r = prefetch_and_load();
  EXPECT_EQ(r.fin.outcome, prefetch_outcome::partial);
  EXPECT_EQ(r.fin.storage_hit_tokens, 20u) << "pages 0-4";
  EXPECT_EQ(store.state_reads, 0u) << "no state read unless every page arrived";
  EXPECT_EQ(r.device_tokens, 0u) << "no state at 20 tokens: the request recomputes";
}

TEST_F(pipeline, ACorruptPageIsNeverServed) {
  store_request();
  const auto keys = keys_of(K);
  std::vector<std::byte> v;
  ASSERT_TRUE(mem.get(l3_pool::kv_page, keys[3], v).ok());
  std::vector<std::byte> enc;
  l3::encode_value(v, enc);
  enc.back() ^= std::byte{1};
  ASSERT_TRUE(mem.overwrite_stored(l3_pool::kv_page, keys[3], enc).ok());
  restart();
  auto r = prefetch_and_load();
  EXPECT_EQ(r.fin.outcome, prefetch_outcome::partial);
  EXPECT_EQ(r.fin.storage_hit_tokens, 12u);
  EXPECT_FALSE(mem.exists(l3_pool::kv_page, keys[3])) << "deleted";
  EXPECT_EQ(mem.usage().corrupt, 1u);
}

TEST_F(pipeline, SlowReadsPastTheDeadlineTimeOutWithWhatArrived) {
  store_request();
  restart();
  store.read_delay = std::chrono::milliseconds(5);            // per read, on the manual clock
  auto r = prefetch_and_load(std::chrono::milliseconds(12));  // batches of 2: 3 batches pass
  EXPECT_EQ(r.fin.outcome, prefetch_outcome::timed_out);
  EXPECT_LT(r.fin.storage_hit_tokens, 48u);
  EXPECT_EQ(r.device_tokens, 0u) << "no state arrived";
}

}  // namespace
}  // namespace hc::test
