#pragma once
// A worker driving a node over RPC with the toy model's bytes (tests/support/toy_bytes):
// it serves a request (its forward writes every KV token and the final state), prefetches
// from storage, and admits a request whose restored prefix it checks byte for byte. Used by
// the tier tests in-process and against a real hybridcached process.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "schema/client.hpp"
#include "storage/l3_keys.hpp"
#include "storage/sha256_page_hasher.hpp"
#include "tests/support/commands.hpp"
#include "tests/support/toy_bytes.hpp"
#include "tests/support/tree_fixture.hpp"

namespace hc::test {

/// Waits until no tier work of `node` is in flight (CacheNode.drain), then evaluates `p`:
/// the asynchronous effects of the steps so far (backups, L3 writes, prefetch reads) have
/// all happened, so one look decides — no polling, no clock.
template <class Pred>
bool after_drain(client& node, Pred p) {
  const status d = node.drain();
  EXPECT_TRUE(d.ok()) << d.err().message;
  return p();
}

inline void expect_ok(const command_result& r) {
  EXPECT_EQ(r.code, errc::ok) << r.error;
}

struct toy_worker {
  static constexpr std::size_t token_bytes = 8, state_bytes = 64, prompt_len = 64;

  /// P = 1, no_buffer without overlap, a host tier twice the device, storage prefetch
  /// from 16 tokens, admission once the prefetch ended.
  static instance_spec spec() {
    instance_spec s;
    s.model_id = "toy-hybrid";
    s.page_size = 1;
    s.kv_tokens = 256;
    s.kv_bytes_per_token = token_bytes;
    s.ssm_slots = 16;
    s.ssm_slot_bytes = state_bytes;
    s.request_rows = 8;
    s.strat = strategy::no_buffer;
    s.overlap = false;
    s.hicache_ratio = 2.0;
    s.prefetch_threshold = 16;
    s.prefetch_policy = prefetch_termination::wait_complete;
    return s;
  }

  client_session& s;
  client* node = nullptr;  ///< the session's node (drain); needed by prefetch()
  std::vector<token_id> K = iota_tokens(100, prompt_len);  ///< the prompt it serves
  std::uint64_t batch = 0;

  std::vector<command_result> step(std::vector<command> cmds) {
    auto r = s.step(cmds);
    EXPECT_TRUE(r.ok()) << r.err().message;
    return r.ok() ? std::move(*r) : std::vector<command_result>(cmds.size());
  }
  command take_ops(request_handle h) { return cmd::take_ops{{h}, ++batch}; }
  /// One request as a worker runs it: admitted with no hit, its forward writes the KV of
  /// every token and the state after the prompt, then it finishes (inserted).
  void serve(request_handle h) {
    auto r = step({create(h, K), cmd::match{h}, cmd::lock{h}, cmd::alloc_req{h},
                   cmd::alloc_kv{h, 0, K.size()}, take_ops(h)});
    for (const auto& one : r)
      expect_ok(one);
    const std::vector<kv_index>& kv = r[4].as<res::alloc_kv>().indices;
    ASSERT_EQ(kv.size(), K.size());
    ASSERT_TRUE(s.begin_forward(batch).ok());
    for (std::size_t i = 0; i < K.size(); ++i)
      ASSERT_TRUE(
          s.write_kv_page(static_cast<std::uint64_t>(kv[i]), kv_bytes(token_bytes, i, K[i])).ok());
    ASSERT_TRUE(s.write_slot(r[3].as<res::alloc_req>().working, state_after(K, state_bytes)).ok());
    ASSERT_TRUE(s.end_forward(batch).ok());
    expect_ok(step({cmd::finish{h}})[0]);
  }
  /// The L3 keys of the prompt's pages (the state is under the last one).
  std::vector<std::string> page_keys() const {
    sha256_page_hasher hasher;
    const instance_spec sp = spec();
    const std::string fp = l3::fingerprint(
        {sp.model_id, sp.tp_rank, sp.tp_size, sp.page_size * token_bytes, state_bytes});
    std::vector<std::string> keys;
    page_digest prior;
    for (std::size_t i = 0; i < K.size(); ++i) {
      prior = hasher.hash_page(i ? &prior : nullptr, std::span<const token_id>(K).subspan(i, 1));
      keys.push_back(l3::page_key(fp, sp.ns, prior));
    }
    return keys;
  }
  /// The prompt of a request that continues K by one token (its match covers all of K).
  std::vector<token_id> continuation() const {
    std::vector<token_id> prompt = K;
    prompt.push_back(9999);
    return prompt;
  }
  /// Creates request h (the continuation of K), starts its prefetch and polls it to its end.
  res::prefetch prefetch(request_handle h) {
    auto r = step({create(h, continuation()), cmd::prefetch{h}});
    expect_ok(r[0]);
    expect_ok(r[1]);
    const res::prefetch last = poll_prefetch(h);
    EXPECT_TRUE(last.ready);
    return last;
  }
  /// Polls request h's running prefetch once the node drained; its last report.
  res::prefetch poll_prefetch(request_handle h) {
    res::prefetch last;
    EXPECT_NE(node, nullptr) << "polling a prefetch needs the worker's node";
    if (node == nullptr) return last;
    EXPECT_TRUE(after_drain(*node, [&] {
      const command_result one = step({cmd::prefetch{h}})[0];
      expect_ok(one);
      if (auto* p = one.get_if<res::prefetch>()) last = *p;
      return !last.outcome.empty();
    })) << "the prefetch had not ended once the node drained";
    return last;
  }
  /// Admits request h: match, lock, alloc_req and its ops for one forward. Checks every
  /// byte of the matched prefix and of the working slot (the COW of the matched state).
  res::match admit_and_check(request_handle h) {
    auto r = step({cmd::match{h}, cmd::lock{h}, cmd::alloc_req{h}, take_ops(h)});
    for (const auto& one : r)
      expect_ok(one);
    EXPECT_TRUE(s.begin_forward(batch).ok());
    if (!r[0].ok() || !r[2].ok()) return {};
    const res::match m = r[0].as<res::match>();
    for (std::size_t i = 0; i < m.indices.size(); ++i) {
      auto got = s.read_kv_page(static_cast<std::uint64_t>(m.indices[i]));
      EXPECT_TRUE(got.ok());
      if (got.ok()) {
        EXPECT_EQ(*got, kv_bytes(token_bytes, i, K[i])) << "KV byte mismatch at " << i;
      }
    }
    if (m.prefix_len > 0) {
      auto w = s.read_slot(r[2].as<res::alloc_req>().working);
      EXPECT_TRUE(w.ok());
      if (w.ok()) {
        EXPECT_EQ(*w, state_after(std::span<const token_id>(K).first(m.prefix_len), state_bytes))
            << "state restored from the wrong position";
      }
    }
    EXPECT_TRUE(s.end_forward(batch).ok());
    return m;
  }
  /// Aborts h, then the idle invariants must hold (full sanity check of the instance).
  void abort_and_check_idle(request_handle h) {
    expect_ok(step({cmd::abort{h}})[0]);
    const command_result r = step({cmd::check{/*full=*/true}})[0];
    expect_ok(r);
    if (r.ok()) {
      EXPECT_TRUE(r.as<res::check>().sanity) << r.as<res::check>().sanity_detail;
    }
  }
};

}  // namespace hc::test
