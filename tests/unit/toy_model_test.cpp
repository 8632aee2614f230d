// The toy hybrid model: its extend pass resumes from the working slot, writes every new
// token's KV, and takes each track snapshot from the indices the node's tracking computed
// — for both chunk-state conventions and chunk sizes 64 / 128 / 256, in packed batches —
// and the snapshot then equals the state recomputed from the tokens. A wrong position from
// the node must give a wrong snapshot (the oracle can fail).
#include <gtest/gtest.h>

#include <random>

#include "actors/scheduler/tracking.hpp"
#include "tests/support/toy_batches.hpp"
#include "tools/hcsim/toy_model.hpp"

namespace hc::sim {
namespace {

struct Case {
  std::size_t chunk;
  chunk_convention conv;
};

class ToyModel : public ::testing::TestWithParam<Case> {
 protected:
  toy_model_config cfg() const {
    toy_model_config c;
    c.chunk = GetParam().chunk;
    c.convention = GetParam().conv;
    return c;
  }
};

struct request {
  std::vector<token_id> tokens;  // prefix + extend
  std::size_t prefix = 0;
  std::vector<std::byte> working, track;
  std::vector<std::vector<std::byte>> kv;
  prefill_track plan;
};

TEST_P(ToyModel, PackedExtendSnapshotsEqualTheRecomputedStates) {
  const toy_model m(cfg());
  const std::size_t C = m.config().chunk;
  std::mt19937 rng(static_cast<unsigned>(C) * 7 + static_cast<unsigned>(GetParam().conv));
  std::size_t checked = 0, from_chunks = 0;
  for (int round = 0; round < 60; ++round) {
    std::vector<request> reqs(1 + rng() % 4);
    for (request& r : reqs) {
      r.prefix = (rng() % 4) * C + (rng() % 2 ? 0 : rng() % C);
      const std::size_t ext = 1 + rng() % (3 * C + 7);
      for (std::size_t i = 0; i < r.prefix + ext; ++i)
        r.tokens.push_back(static_cast<token_id>(rng() % 50000));
      std::optional<std::size_t> branching;
      if (rng() % 3 == 0) branching = r.prefix + (1 + rng() % 3) * C;  // a shared-prefix split
      r.plan = plan_prefill_track(r.prefix, ext, C, branching, false, 0, 2);
      r.working = m.state_after(std::span<const token_id>(r.tokens).first(r.prefix));
      r.track.assign(m.config().slot_bytes(), std::byte{0});
      r.kv.assign(ext, std::vector<std::byte>(m.config().token_bytes()));
    }
    std::vector<extend_item> batch;
    for (request& r : reqs) {
      extend_item it;
      it.working = r.working;
      it.prefix_len = r.prefix;
      it.tokens = std::span<const token_id>(r.tokens).subspan(r.prefix);
      for (auto& k : r.kv)
        it.kv.emplace_back(k);
      it.mask = r.plan.mask;
      it.kernel_seqlen = r.plan.kernel_seqlen;
      it.track = r.track;
      batch.push_back(std::move(it));
    }
    m.extend(batch);
    for (const request& r : reqs) {
      EXPECT_EQ(r.working, m.state_after(r.tokens)) << "the working slot ends after every token";
      for (std::size_t i = 0; i < r.kv.size(); ++i)
        ASSERT_EQ(r.kv[i], m.kv(r.prefix + i, r.tokens[r.prefix + i]));
      if (!r.plan.mask) continue;
      ++checked;
      if (r.plan.tracked_len != r.tokens.size()) ++from_chunks;  // not the final state
      EXPECT_EQ(r.track,
                m.state_after(std::span<const token_id>(r.tokens).first(r.plan.tracked_len)))
          << "snapshot of a request with prefix " << r.prefix << ", extend "
          << r.tokens.size() - r.prefix << ", kernel_seqlen " << r.plan.kernel_seqlen;
    }
  }
  EXPECT_GT(checked, 40u);
  EXPECT_GT(from_chunks, 20u) << "the per-chunk state path must be exercised";
}

TEST_P(ToyModel, AWrongTrackPositionGivesAWrongSnapshot) {
  const toy_model m(cfg());
  const std::size_t C = m.config().chunk;
  std::vector<token_id> tokens(3 * C + 5);
  for (std::size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<token_id>(i * 7 + 1);
  const prefill_track plan = plan_prefill_track(0, tokens.size(), C, std::nullopt, false, 0, 2);
  ASSERT_TRUE(plan.mask);
  for (std::int64_t shift : {-static_cast<std::int64_t>(C), static_cast<std::int64_t>(C)}) {
    std::vector<std::byte> working(m.config().slot_bytes()), track(m.config().slot_bytes());
    std::vector<std::vector<std::byte>> kv(tokens.size(),
                                           std::vector<std::byte>(m.config().token_bytes()));
    extend_item it;
    it.working = working;
    it.tokens = tokens;
    for (auto& k : kv)
      it.kv.emplace_back(k);
    it.mask = true;
    it.kernel_seqlen = plan.kernel_seqlen + shift;  // the node got the position wrong
    it.track = track;
    std::vector<extend_item> batch{it};
    m.extend(batch);
    EXPECT_NE(track, m.state_after(std::span<const token_id>(tokens).first(plan.tracked_len)))
        << "shift " << shift;
  }
}

TEST_P(ToyModel, TheDeviceBatchLeavesTheBytesTheModelDoes) {
  // CUDA mode runs plan_extend / plan_decode's batches; their host run (the kernels'
  // per-thread code in loops) must leave every byte of both pools as extend() / decode().
  const toy_model m(cfg());
  std::mt19937 rng(static_cast<unsigned>(m.config().chunk) + 11);
  std::size_t captures = 0, fills = 0, final_copies = 0;
  for (int round = 0; round < 80; ++round) {
    const testing::toy_pools start = testing::random_pools(m, 4096, 24, rng);
    const testing::random_forward f = testing::random_forward_of(m, start, rng, round % 4 == 3);
    testing::toy_pools want = start, got = start;
    testing::run_model(m, f, want);
    const toy::forward_batch b = testing::plan_of(m, f);
    ASSERT_TRUE(b.check(m.shape(), got.kv_rows, got.slots).ok())
        << b.check(m.shape(), got.kv_rows, got.slots).err().message;
    toy::run_on_host(m.shape(), b, got.kv, got.ssm);
    ASSERT_EQ(got.kv, want.kv) << "round " << round;
    ASSERT_EQ(got.ssm, want.ssm) << "round " << round;
    captures += b.captures.size();
    for (const toy::conv_fix& x : b.fixes)
      fills += x.fill_lanes;
    for (const toy::scan_item& it : b.items)
      final_copies += it.final_copy >= 0;
  }
  EXPECT_GT(captures, 20u);
  EXPECT_GT(fills, 0u) << "a track source outside the chunk states must occur";
  EXPECT_GT(final_copies, 0u);
}

TEST(ToyForwardBatch, OutOfBoundsOrOverlappingWritesAreRefused) {
  const toy_model m(toy_model_config{});
  std::mt19937 rng(3);
  const testing::toy_pools p = testing::random_pools(m, 4096, 24, rng);
  testing::random_forward f = testing::random_forward_of(m, p, rng, false);
  const toy::forward_batch good = m.plan_extend(f.extends);
  ASSERT_TRUE(good.check(m.shape(), p.kv_rows, p.slots).ok());
  auto refused = [&](auto change) {
    toy::forward_batch b = good;
    change(b);
    return b.check(m.shape(), p.kv_rows, p.slots).err().code == errc::invalid_argument;
  };
  EXPECT_TRUE(refused([&](toy::forward_batch& b) { b.kv_rows[0] = 4096; }));
  EXPECT_TRUE(refused([&](toy::forward_batch& b) { b.kv_rows[0] = -1; }));
  EXPECT_TRUE(refused([&](toy::forward_batch& b) { b.items[0].working = 24; }));
  EXPECT_TRUE(refused([&](toy::forward_batch& b) { b.items.back().n_tokens += 1; }));
  EXPECT_TRUE(refused([&](toy::forward_batch& b) { b.positions.pop_back(); }));
  EXPECT_TRUE(refused([&](toy::forward_batch& b) {
    b.captures.push_back({0, b.items[0].n_tokens + 1, 23});
  }));
  EXPECT_TRUE(refused([&](toy::forward_batch& b) {
    b.captures.push_back({0, 0, b.items[0].working});  // a working slot written twice
  }));
  EXPECT_TRUE(refused([&](toy::forward_batch& b) {
    b.fixes.push_back({5, 0, static_cast<std::uint32_t>(b.conv_values.size())});
  }));
  toy::shape wide = m.shape();
  wide.conv_kernel = toy::max_conv_kernel + 1;
  EXPECT_EQ(toy::check_shape(wide).err().code, errc::invalid_argument);
}

TEST(ToyModelBasics, DecodeAdvancesAndSnapshotsTheWorkingSlot) {
  const toy_model m(toy_model_config{});
  std::vector<token_id> t = {5, 6, 7, 8, 9};
  std::vector<std::byte> w = m.state_after(std::span<const token_id>(t).first(4));
  std::vector<std::byte> kv(m.config().token_bytes()), track(m.config().slot_bytes());
  m.decode(w, 4, t[4], kv, track);
  EXPECT_EQ(w, m.state_after(t));
  EXPECT_EQ(track, w);
  EXPECT_EQ(kv, m.kv(4, 9));
  EXPECT_NE(m.kv(4, 9), m.kv(5, 9)) << "KV depends on the position";
  EXPECT_NE(m.state_after(std::vector<token_id>{1, 2}), m.state_after(std::vector<token_id>{2, 1}));
}

INSTANTIATE_TEST_SUITE_P(
    ChunksAndConventions, ToyModel,
    ::testing::Values(Case{64, chunk_convention::fla}, Case{128, chunk_convention::fla},
                      Case{256, chunk_convention::fla}, Case{64, chunk_convention::mamba2},
                      Case{128, chunk_convention::mamba2}, Case{256, chunk_convention::mamba2}),
    [](const auto& p) {
      return std::string(p.param.conv == chunk_convention::fla ? "FLA" : "Mamba2") +
             std::to_string(p.param.chunk);
    });

}  // namespace
}  // namespace hc::sim
