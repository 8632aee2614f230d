// Snapshot tracking (spec §3.10, seed PR 15829).
// Groups: A. chunk size  B. prefill plan (table)  C. decode / spec boundaries
//         D. kernel indices against a chunked toy scan, both conventions, packed batches
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "actors/scheduler/tracking.hpp"

namespace hc {
namespace {

// ---- A ---------------------------------------------------------------------------------
TEST(ChunkSize, MaxOfModelChunkAndPageWithDivisibility) {
  struct row {
    std::size_t chunk, page;
    std::optional<std::size_t> want;
  };
  const row cases[] = {{64, 1, 64},    {64, 64, 64},           {64, 128, 128},      {256, 64, 256},
                       {128, 16, 128}, {64, 96, std::nullopt}, {0, 1, std::nullopt}};
  for (const row& c : cases)
    EXPECT_EQ(mamba_cache_chunk_size(c.chunk, c.page), c.want) << c.chunk << "/" << c.page;
}

// ---- B ---------------------------------------------------------------------------------
TEST(PrefillPlan, Table) {
  struct row {
    std::size_t prefix, extend, C;
    std::optional<std::size_t> branching;
    bool lazy;
    int next, pp;
    bool mask;
    std::int64_t kernel;
    std::size_t tracked;
    int next_after;
  };
  const row cases[] = {
      {0, 200, 64, {}, false, 0, 2, true, 200, 192, 1},     // unaligned extend
      {0, 63, 64, {}, false, 0, 2, false, -1, 0, 0},        // too short: no snapshot
      {0, 64, 64, {}, false, 1, 2, true, 64, 64, 0},        // exactly one chunk
      {64, 100, 64, {}, false, 0, 2, true, 164, 128, 1},    // relative to the prefix
      {0, 300, 64, 128, false, 0, 2, true, 129, 128, 1},    // branching point (+1)
      {10, 300, 64, 128, false, 0, 2, true, 310, 266, 1},   // branching not C-aligned from prefix
      {128, 300, 64, 128, false, 0, 2, true, 428, 384, 1},  // branching <= prefix: ignored
      {0, 300, 64, 300, false, 0, 2, true, 300, 256, 1},    // branching == end: ignored
      {0, 200, 64, {}, true, 0, 2, true, 200, 192, 0},      // lazy never flips at prefill
      {0, 200, 64, {}, false, 0, 1, true, 200, 192, 0},     // pp 1: other_idx(0) == 0
      {0, 1000, 256, 512, false, 1, 2, true, 513, 512, 0},  // Mamba2 chunk 256
  };
  for (const row& c : cases) {
    SCOPED_TRACE(::testing::Message() << "prefix " << c.prefix << " extend " << c.extend);
    auto t = plan_prefill_track(c.prefix, c.extend, c.C, c.branching, c.lazy, c.next, c.pp);
    EXPECT_EQ(t.mask, c.mask);
    EXPECT_EQ(t.kernel_seqlen, c.kernel);
    if (c.mask) {
      EXPECT_EQ(t.tracked_len, c.tracked);
    }
    EXPECT_EQ(t.track_entry, c.next);
    EXPECT_EQ(t.next_after, c.next_after);
  }
}

// ---- C ---------------------------------------------------------------------------------
TEST(DecodeBoundary, MultiplesOfTheInterval) {
  EXPECT_TRUE(is_decode_boundary(256, 256));
  EXPECT_FALSE(is_decode_boundary(255, 256));
  EXPECT_TRUE(is_decode_boundary(4, 2));
  EXPECT_FALSE(is_decode_boundary(5, 0));
}

TEST(SpecDecodeBoundary, AcrossAcceptedDrafts) {
  struct row {
    std::size_t seq, accepted, I;
    std::optional<std::size_t> want;
  };
  const row cases[] = {{257, 2, 256, 256},
                       {300, 3, 256, std::nullopt},
                       {256, 0, 256, std::nullopt},
                       {258, 0, 256, std::nullopt},
                       {257, 0, 256, 256},
                       {515, 4, 256, 512},
                       {10, 3, 4, 8}};
  for (const row& c : cases)
    EXPECT_EQ(spec_decode_boundary(c.seq, c.accepted, c.I), c.want) << c.seq << "/" << c.accepted;
}

// ---- D ---------------------------------------------------------------------------------
// A toy SSM: state' = state * 0x100000001B3 + token (mod 2^64), a chunked scan over a packed
// batch that emits per-chunk states exactly as each kernel family does.
std::uint64_t fold(std::uint64_t s, const std::vector<std::int64_t>& toks, std::size_t from,
                   std::size_t to) {
  for (std::size_t i = from; i < to; ++i)
    s = s * 0x100000001B3ull + static_cast<std::uint64_t>(toks[i]);
  return s;
}

struct toy_request {
  std::uint64_t prefix_state;
  std::size_t prefix_len;
  std::vector<std::int64_t> extend;  // token values
  std::optional<std::size_t> branching;
};

struct packed_scan {
  std::vector<std::int64_t> tokens;         // concatenated extend tokens
  std::vector<std::uint64_t> chunk_states;  // per convention
  std::vector<std::uint64_t> final_states;  // per request
};

packed_scan run_scan(const std::vector<toy_request>& reqs, std::size_t C, chunk_convention conv) {
  packed_scan s;
  for (const toy_request& r : reqs) {
    s.tokens.insert(s.tokens.end(), r.extend.begin(), r.extend.end());
    const std::size_t E = r.extend.size();
    const std::size_t n = chunk_states_of(E, C, conv);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t upto = conv == chunk_convention::fla ? k * C : (k + 1) * C;
      s.chunk_states.push_back(fold(r.prefix_state, r.extend, 0, upto));
    }
    s.final_states.push_back(fold(r.prefix_state, r.extend, 0, E));
  }
  return s;
}

void check_batch(const std::vector<toy_request>& reqs, std::size_t C, std::size_t K,
                 chunk_convention conv) {
  std::vector<packed_extend> batch;
  std::vector<prefill_track> plans;
  for (const toy_request& r : reqs) {
    auto t = plan_prefill_track(r.prefix_len, r.extend.size(), C, r.branching, false, 0, 2);
    plans.push_back(t);
    batch.push_back({r.prefix_len, r.extend.size(), t.mask, t.kernel_seqlen});
  }
  const packed_scan scan = run_scan(reqs, C, conv);
  const auto src = compute_track_sources(batch, C, K, conv);
  std::size_t start = 0;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "request " << i << " of " << reqs.size());
    const toy_request& r = reqs[i];
    ASSERT_EQ(src[i].mask, plans[i].mask);
    if (src[i].mask) {
      const std::size_t aligned = plans[i].tracked_len - r.prefix_len;
      EXPECT_EQ(src[i].aligned_len, aligned);
      const std::uint64_t want = fold(r.prefix_state, r.extend, 0, aligned);
      const std::uint64_t got =
          src[i].from_final_state
              ? scan.final_states[i]
              : scan.chunk_states.at(static_cast<std::size_t>(src[i].chunk_state_index));
      EXPECT_EQ(got, want) << "SSM snapshot is not the state after " << plans[i].tracked_len
                           << " tokens";
      // Conv snapshot: the K-1 extend inputs just before the aligned end.
      std::vector<std::int64_t> conv_in;
      for (std::int64_t p : src[i].conv_positions)
        conv_in.push_back(scan.tokens[static_cast<std::size_t>(p)]);
      std::vector<std::int64_t> expect(
          r.extend.begin() + static_cast<std::ptrdiff_t>(aligned - (K - 1)),
          r.extend.begin() + static_cast<std::ptrdiff_t>(aligned));
      EXPECT_EQ(conv_in, expect);
    }
    start += r.extend.size();
  }
}

toy_request make_req(std::mt19937_64& rng, std::size_t C, bool with_branching) {
  toy_request r;
  r.prefix_state = rng();
  r.prefix_len = (rng() % 4) * C + (rng() % 2 ? 0 : rng() % C);
  const std::size_t E = rng() % (5 * C) + 1;
  for (std::size_t i = 0; i < E; ++i)
    r.extend.push_back(static_cast<std::int64_t>(rng() % 50000));
  if (with_branching && E > C) r.branching = r.prefix_len + (1 + rng() % (E / C)) * C;
  return r;
}

class KernelIndices : public ::testing::TestWithParam<std::tuple<chunk_convention, std::size_t>> {};

TEST_P(KernelIndices, AlignedUnalignedAndBranchingInPackedBatches) {
  const auto [conv, C] = GetParam();
  std::mt19937_64 rng(1234 + C);
  const std::size_t K = 4;
  // Single requests at exact boundaries.
  check_batch({{7, 0, std::vector<std::int64_t>(C, 3), {}}}, C, K, conv);
  check_batch({{7, C, std::vector<std::int64_t>(2 * C + 5, 4), {}}}, C, K, conv);
  // Packed batches, with and without branching points, short requests mixed in.
  for (int round = 0; round < 200; ++round) {
    std::vector<toy_request> reqs;
    const std::size_t n = 1 + rng() % 6;
    for (std::size_t i = 0; i < n; ++i)
      reqs.push_back(make_req(rng, C, round % 2 == 1));
    check_batch(reqs, C, K, conv);
    if (HasFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Conventions, KernelIndices,
                         ::testing::Combine(::testing::Values(chunk_convention::fla,
                                                              chunk_convention::mamba2),
                                            ::testing::Values(64, 128, 256)),
                         [](const auto& i) {
                           return std::string(to_string(std::get<0>(i.param))) + "_C" +
                                  std::to_string(std::get<1>(i.param));
                         });

TEST(KernelIndices, UsingTheOtherConventionsIndexIsCaught) {
  // The regression of PR 15829: computing Mamba2 indices with the FLA rule. The toy scan
  // exposes it, which proves the check above can fail.
  const std::size_t C = 64, K = 4;
  std::vector<toy_request> reqs = {{1, 0, std::vector<std::int64_t>(100, 5), {}},
                                   {2, 0, std::vector<std::int64_t>(200, 6), {}}};
  std::vector<packed_extend> batch;
  for (auto& r : reqs) {
    auto t = plan_prefill_track(r.prefix_len, r.extend.size(), C, {}, false, 0, 2);
    batch.push_back({r.prefix_len, r.extend.size(), t.mask, t.kernel_seqlen});
  }
  const packed_scan mamba2 = run_scan(reqs, C, chunk_convention::mamba2);
  const auto wrong = compute_track_sources(batch, C, K, chunk_convention::fla);
  const auto right = compute_track_sources(batch, C, K, chunk_convention::mamba2);
  const std::uint64_t want = fold(2, reqs[1].extend, 0, 192);
  EXPECT_EQ(mamba2.chunk_states.at(static_cast<std::size_t>(right[1].chunk_state_index)), want);
  const auto wi = static_cast<std::size_t>(wrong[1].chunk_state_index);
  EXPECT_TRUE(wi >= mamba2.chunk_states.size() || mamba2.chunk_states[wi] != want);
}

}  // namespace
}  // namespace hc
