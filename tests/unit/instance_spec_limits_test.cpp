// A spec's sizes against the ids that must name them: KV ids and slot ids are 32-bit
// (ids.hpp), so validate() refuses pools whose ids would wrap, naming the field.
#include <gtest/gtest.h>

#include <string>

#include "actors/scheduler/instance_config.hpp"

namespace hc::test {
namespace {

instance_spec small() {
  instance_spec s;
  s.model_id = "limits";
  s.kv_tokens = 4096;
  s.ssm_slots = 16;
  return s;
}

void expect_refused(const instance_spec& s, const std::string& field) {
  const status v = validate(s);
  ASSERT_FALSE(v.ok()) << field;
  EXPECT_EQ(v.err().code, errc::invalid_config);
  EXPECT_NE(v.err().message.find(field), std::string::npos) << v.err().message;
}

TEST(InstanceSpecLimits, KvTokensUpToTheLastInt32IdAreAccepted) {
  instance_spec s = small();
  s.kv_tokens = max_pool_ids - 1;  // + page 0 (one token at page 1) = the last id
  EXPECT_TRUE(validate(s).ok()) << validate(s).err().message;
  s.kv_tokens = max_pool_ids;
  expect_refused(s, "kvTokens");
  s.kv_tokens = std::size_t{1} << 62;  // once a bad_alloc that stopped the node
  expect_refused(s, "kvTokens");
}

TEST(InstanceSpecLimits, KvTokensCountThePagedPoolsReservedPage) {
  instance_spec s = small();
  s.page_size = s.chunk_size = 64;
  s.strat = strategy::extra_buffer;  // no_buffer needs page 1
  s.kv_tokens = (max_pool_ids - 64) / 64 * 64;
  EXPECT_TRUE(validate(s).ok()) << validate(s).err().message;
  s.kv_tokens += 64;
  expect_refused(s, "kvTokens");
}

TEST(InstanceSpecLimits, SsmSlotsUpToTheLastInt32IdAreAccepted) {
  instance_spec s = small();
  spec_limits no_cap;  // the id limit alone
  no_cap.max_ssm_slots = max_pool_ids;
  s.ssm_slots = max_pool_ids - 1;  // + slot 0
  EXPECT_TRUE(validate(s, no_cap).ok()) << validate(s, no_cap).err().message;
  s.ssm_slots = max_pool_ids;
  const status v = validate(s, no_cap);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.err().message.find("32-bit"), std::string::npos) << v.err().message;
}

/// A slot count of billions (bytes given as slots) would take the node gigabytes of
/// bookkeeping and tens of seconds to open: refused past spec_limits::max_ssm_slots.
TEST(InstanceSpecLimits, SsmSlotsPastTheNodesCapAreRefused) {
  instance_spec s = small();
  s.ssm_slots = spec_limits{}.max_ssm_slots;
  EXPECT_TRUE(validate(s).ok()) << validate(s).err().message;
  s.ssm_slots += 1;
  expect_refused(s, "ssmSlots");
  s.ssm_slots = max_pool_ids - 1;
  expect_refused(s, "a slot count, not bytes");
}

TEST(InstanceSpecLimits, SlotsPerRequestCannotExceedTheSlots) {
  instance_spec s = small();
  s.slots_per_request = s.ssm_slots;
  EXPECT_TRUE(validate(s).ok());
  s.slots_per_request = s.ssm_slots + 1;
  expect_refused(s, "slotsPerRequest");
}

// SGLang's own rules on the strategy (sizing.hpp validate_strategy): where SGLang would
// rewrite a setting the worker's pools already have (the strategy, the page size), the node
// cannot follow, so it refuses the spec naming the rule instead of running another cache.
TEST(InstanceSpecLimits, SettingsSglangWouldRewriteAreRefused) {
  instance_spec s = small();
  s.page_size = s.chunk_size = 64;
  expect_refused(s, "strategy no_buffer needs pageSize 1");
  s.strat = strategy::extra_buffer;
  EXPECT_TRUE(validate(s).ok()) << validate(s).err().message;
  s.strat = strategy::extra_buffer_lazy;
  EXPECT_TRUE(validate(s).ok()) << validate(s).err().message;
  s.overlap = false;  // lazy needs overlap scheduling
  expect_refused(s, "extra_buffer_lazy requires overlap");
  s = small();  // page 1 without the extra buffer, overlap on or off: as SGLang runs it
  EXPECT_TRUE(validate(s).ok()) << validate(s).err().message;
  s.overlap = false;
  EXPECT_TRUE(validate(s).ok()) << validate(s).err().message;
}

// The model id and namespace name the instance where an operator reads them (hcctl inspect,
// KV event topics, the L3 store's keys): a client's terminal escape or newline reached the
// operator's terminal as it was, and a key-sized name went into every L3 key.
TEST(InstanceSpecLimits, ModelIdAndNamespaceArePrintableAndShort) {
  instance_spec s = small();
  s.ns = "";  // the default namespace
  EXPECT_TRUE(validate(s).ok()) << validate(s).err().message;
  s.ns = "lora/adapter-7 ü";
  EXPECT_TRUE(validate(s).ok()) << validate(s).err().message;
  s.model_id = std::string(max_spec_name_bytes, 'm');
  s.ns = std::string(max_spec_name_bytes, 'n');
  EXPECT_TRUE(validate(s).ok()) << validate(s).err().message;
  for (const std::string& bad :
       {std::string("evil\x1b[31m"), std::string("two\nlines"), std::string("nul\0byte", 8),
        std::string("del\x7f"), std::string(max_spec_name_bytes + 1, 'm')}) {
    s = small();
    s.model_id = bad;
    expect_refused(s, "modelId must be printable text");
    s = small();
    s.ns = bad;
    expect_refused(s, "namespace must be printable text");
  }
}

// An empty model id (the wire's default, what a client that forgets it sends) was accepted:
// two models of one shape — fine-tunes of one base — that both left it out shared one
// instance and its L3 keys, and each was served the other's KV without an error.
TEST(InstanceSpecLimits, AnEmptyModelIdIsRefused) {
  instance_spec s = small();
  s.model_id = "";
  expect_refused(s, "modelId is empty");
  s.model_id = std::string(1, ' ');  // named, if oddly: an operator sees it in hcctl inspect
  EXPECT_TRUE(validate(s).ok()) << validate(s).err().message;
}

}  // namespace
}  // namespace hc::test
