// Strategy validation and sizing formulas (spec §4.1, §4.2, §6), table driven.
// Groups: A. validation  B. ratio / factor  C. pool size and admission  D. PD decode
#include <gtest/gtest.h>

#include "actors/scheduler/sizing.hpp"

namespace hc {
namespace {

// ---- A ---------------------------------------------------------------------------------
TEST(ValidateStrategy, RejectedCombinationsNameTheirOptions) {
  struct row {
    const char* what;
    strategy_options o;
    const char* must_mention;
  };
  auto opts = [](strategy s) {
    strategy_options o;
    o.strat = s;
    return o;
  };
  std::vector<row> cases;
  {
    auto o = opts(strategy::extra_buffer);
    o.radix_cache = false;
    cases.push_back({"extra needs radix", o, "--disable-radix-cache"});
  }
  {
    auto o = opts(strategy::extra_buffer_lazy);
    o.overlap = false;
    cases.push_back({"lazy needs overlap", o, "--disable-overlap-schedule"});
  }
  {
    auto o = opts(strategy::extra_buffer_lazy);
    o.spec_draft_tokens = 3;
    cases.push_back({"lazy no spec", o, "--speculative-num-draft-tokens"});
  }
  {
    auto o = opts(strategy::extra_buffer);
    o.page_size = 64;
    o.track_interval = 100;
    cases.push_back({"interval % page", o, "--mamba-track-interval"});
  }
  {
    auto o = opts(strategy::extra_buffer);
    o.spec_draft_tokens = 8;
    o.track_interval = 4;
    cases.push_back({"interval >= D", o, "--speculative-num-draft-tokens"});
  }
  {
    auto o = opts(strategy::extra_buffer);
    o.backend = chunk_convention::mamba2;
    o.model_chunk = 256;
    o.track_interval = 128;
    cases.push_back({"mamba2 interval", o, "mamba_chunk_size"});
  }
  {
    auto o = opts(strategy::extra_buffer);
    o.backend = chunk_convention::mamba2;
    o.model_chunk = 2;
    o.conv_kernel = 4;
    o.track_interval = 256;
    cases.push_back({"mamba2 conv", o, "conv kernel"});
  }
  {
    auto o = opts(strategy::no_buffer);
    o.spec_draft_tokens = 3;
    cases.push_back({"no_buffer + spec + radix", o, "speculative"});
  }
  {
    auto o = opts(strategy::extra_buffer);
    o.page_size = 96;
    o.track_interval = 96 * 4;
    cases.push_back({"chunk/page divisibility", o, "--page-size"});
  }
  {
    auto o = opts(strategy::extra_buffer_lazy);
    o.pd = pd_mode::decode;
    o.decode_radix_cache = true;
    cases.push_back({"lazy + PD decode radix", o, "extra_buffer_lazy"});
  }
  {
    auto o = opts(strategy::no_buffer);
    o.page_size = 0;
    cases.push_back({"page 0", o, "--page-size"});
  }
  for (const row& c : cases) {
    auto v = validate_strategy(c.o);
    ASSERT_FALSE(v.ok()) << c.what;
    EXPECT_EQ(v.err().code, errc::invalid_config) << c.what;
    EXPECT_NE(v.err().message.find(c.must_mention), std::string::npos)
        << c.what << ": '" << v.err().message << "' does not name " << c.must_mention;
  }
}

TEST(ValidateStrategy, CorrectionsComeWithWarnings) {
  strategy_options o;
  o.strat = strategy::no_buffer;
  o.page_size = 64;
  o.overlap = true;
  auto v = validate_strategy(o);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->page_size, 1u);
  EXPECT_FALSE(v->overlap);
  EXPECT_EQ(v->warnings.size(), 2u);

  strategy_options d;
  d.strat = strategy::extra_buffer;
  d.pd = pd_mode::decode;
  auto dv = validate_strategy(d);
  ASSERT_TRUE(dv.ok());
  EXPECT_EQ(dv->strat, strategy::no_buffer) << "decode node without decode radix cache";
  EXPECT_FALSE(dv->radix_cache);
  ASSERT_EQ(dv->warnings.size(), 1u);
  EXPECT_NE(dv->warnings[0].find("no_buffer"), std::string::npos);
}

TEST(ValidateStrategy, AcceptedCombinations) {
  struct row {
    strategy s;
    std::size_t page, chunk, interval;
    bool overlap;
    std::size_t C;
    int pp;
  };
  const row cases[] = {{strategy::extra_buffer, 64, 64, 256, true, 64, 2},
                       {strategy::extra_buffer, 1, 64, 2, false, 64, 1},  // GDN e2e: interval 2
                       {strategy::extra_buffer, 128, 64, 256, true, 128, 2},
                       {strategy::extra_buffer_lazy, 16, 64, 256, true, 64, 2},
                       {strategy::no_buffer, 1, 64, 256, false, 64, 0}};
  for (const row& c : cases) {
    strategy_options o;
    o.strat = c.s;
    o.page_size = c.page;
    o.model_chunk = c.chunk;
    o.track_interval = c.interval;
    o.overlap = c.overlap;
    auto v = validate_strategy(o);
    ASSERT_TRUE(v.ok()) << v.err().message;
    EXPECT_EQ(v->chunk_size, c.C);
    EXPECT_EQ(v->pp_size, c.pp);
  }
}

// ---- B ---------------------------------------------------------------------------------
TEST(MambaRatio, PerStrategy) {
  EXPECT_EQ(*mamba_ratio(strategy::no_buffer, false, true), 1u);
  EXPECT_EQ(*mamba_ratio(strategy::no_buffer, true, false), 3u);
  EXPECT_EQ(*mamba_ratio(strategy::extra_buffer, true, true), 5u);
  EXPECT_EQ(*mamba_ratio(strategy::extra_buffer, true, false), 4u);
  EXPECT_EQ(*mamba_ratio(strategy::extra_buffer_lazy, true, true), 4u);
  EXPECT_FALSE(mamba_ratio(strategy::extra_buffer_lazy, true, false).ok());
  EXPECT_EQ(alloc_factor(strategy::no_buffer, true), 3u);
  EXPECT_EQ(alloc_factor(strategy::extra_buffer, true), 3u);
  EXPECT_EQ(alloc_factor(strategy::extra_buffer_lazy, true), 2u);
  EXPECT_EQ(alloc_factor(strategy::extra_buffer, false), 1u);
}

// ---- C ---------------------------------------------------------------------------------
TEST(SlotPool, RatioSplitExplicitAndSpec) {
  slot_budget b;
  b.rest_bytes = 19'000'000'000;
  b.bytes_per_slot = 77'266'944;  // Qwen3-Next TP1
  auto r = size_slot_pool(b, 5, true);
  ASSERT_TRUE(r.ok());
  // budget = rest * 0.9 / 1.9
  EXPECT_EQ(r->slots, static_cast<std::size_t>(19e9 * 0.9 / 1.9 / 77'266'944.0));
  EXPECT_EQ(r->kv_bytes, b.rest_bytes - r->slots * b.bytes_per_slot);

  b.spec_draft_tokens = 4;
  auto s = size_slot_pool(b, 5, true);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->slots, static_cast<std::size_t>(19e9 * 0.9 / 1.9 / (77'266'944.0 * (1 + 4.0 / 5))));

  slot_budget e;
  e.explicit_slots = 101;
  e.dp_size = 2;
  EXPECT_EQ(size_slot_pool(e, 3, true)->slots, 50u);
  slot_budget m;
  m.max_running_requests = 64;
  EXPECT_EQ(size_slot_pool(m, 1, false)->slots, 64u);
  slot_budget tiny;
  tiny.rest_bytes = 10;
  tiny.bytes_per_slot = 1000;
  EXPECT_EQ(size_slot_pool(tiny, 3, true).err().code, errc::invalid_config);
}

TEST(Admission, MinOfTokenBoundAndSlotsOverRatio) {
  EXPECT_EQ(*admission_bound(1000, 100, 3), 33u);
  EXPECT_EQ(*admission_bound(10, 100, 3), 10u);
  EXPECT_FALSE(admission_bound(1000, 2, 3).ok());
}

// ---- D ---------------------------------------------------------------------------------
TEST(PdDecodeSizing, RaisesNeverCaps) {
  struct row {
    std::size_t size;
    std::optional<std::size_t> configured;
    strategy s;
    bool overlap;
    std::size_t pre, per, needed, slots;
    bool warns;
  };
  const row cases[] = {
      {16, {}, strategy::no_buffer, true, 32, 1, 48, 48, false},
      {16, 1000, strategy::no_buffer, true, 32, 1, 48, 1000, false},  // not capped (PR 20858 bug)
      {16, 40, strategy::extra_buffer, true, 32, 3, 144, 144, true},  // raised with a warning
      {16, 40, strategy::extra_buffer, false, 32, 2, 96, 96, true},
      {64, {}, strategy::extra_buffer, true, 0, 3, 192, 192, false},  // > 32: env pre-alloc (0)
  };
  for (const row& c : cases) {
    pd_decode_inputs in;
    in.max_running_requests = c.size;
    in.configured_slots = c.configured;
    in.strat = c.s;
    in.overlap = c.overlap;
    auto s = size_pd_decode(in);
    EXPECT_EQ(s.pre_alloc, c.pre);
    EXPECT_EQ(s.slots_per_req, c.per);
    EXPECT_EQ(s.max_slots_needed, c.needed);
    EXPECT_EQ(s.slots, c.slots);
    EXPECT_EQ(!s.warnings.empty(), c.warns);
    EXPECT_EQ(s.request_rows, c.size + c.pre);
  }
}

}  // namespace
}  // namespace hc
