// L2 host pool sizing (cache-semantics.md §5.1) and the page-first byte layout.
#include <gtest/gtest.h>

#include "actors/host_storage/host_pools.hpp"

namespace hc::test {
namespace {

host_pool_request base() {
  host_pool_request r;
  r.device_kv_tokens = 4096;
  r.device_slots = 64;
  r.page_size = 64;
  r.kv_bytes_per_token = 4096;
  r.state_bytes = 49536;
  return r;
}

TEST(HostPoolSizing, RatioDoublesTheDevicePoolsAndAddsOneSlot) {
  auto s = size_host_pools(base());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kv_tokens, 8192u);
  EXPECT_EQ(s->slots, 129u) << "+1 rule";
  EXPECT_EQ(s->bytes(), 8192ull * 4096 + 129ull * 49536);
}

TEST(HostPoolSizing, AByteBudgetIsSplitLikeTheDevicePools) {
  host_pool_request r = base();
  r.host_bytes = 3 * (4096ull * 4096 + 64ull * 49536);
  auto s = size_host_pools(r);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kv_tokens % 64, 0u);
  EXPECT_NEAR(static_cast<double>(s->kv_tokens), 3 * 4096.0, 64.0);
  EXPECT_NEAR(static_cast<double>(s->slots), 3 * 64.0 + 1, 2.0);
  EXPECT_LE(s->bytes(), r.host_bytes + r.state_bytes);
}

TEST(HostPoolSizing, PoolsNotLargerThanTheDeviceAreRefused) {
  host_pool_request r = base();
  r.ratio = 1.0;
  auto s = size_host_pools(r);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.err().code, errc::invalid_config);
  EXPECT_NE(s.err().message.find("--hicache-ratio"), std::string::npos);
  r = base();
  r.host_bytes = 1 << 20;
  s = size_host_pools(r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.err().message.find("larger than the device"), std::string::npos) << s.err().message;
}

TEST(HostPoolSizing, TheSsmPoolsOwnBytesTakeTheirPartOfTheBudget) {
  // sglang#39436's case: the device SSM pool is small, so the proportional split leaves the
  // host too few checkpoint slots; given its own bytes, the SSM pool gets them, and the KV
  // pool the rest of the budget.
  host_pool_request r = base();
  r.host_bytes = 64ull << 20;
  r.ssm_bytes = 16ull << 20;
  auto s = size_host_pools(r);
  ASSERT_TRUE(s.ok()) << s.err().message;
  EXPECT_EQ(s->slots, (16ull << 20) / 49536 + 1);
  EXPECT_EQ(s->kv_tokens, (48ull << 20) / 4096 / 64 * 64);
  EXPECT_LE(s->bytes(), r.host_bytes + r.state_bytes);
  host_pool_request split = base();
  split.host_bytes = r.host_bytes;
  auto p = size_host_pools(split);
  ASSERT_TRUE(p.ok());
  EXPECT_LT(p->slots, s->slots) << "the proportional split gives fewer slots";
}

TEST(HostPoolSizing, TheSsmPoolsOwnBytesBesideARatio) {
  host_pool_request r = base();
  r.ratio = 3.0;
  r.ssm_bytes = 200ull * 49536 + 100;
  auto s = size_host_pools(r);
  ASSERT_TRUE(s.ok()) << s.err().message;
  EXPECT_EQ(s->kv_tokens, 3u * 4096) << "the KV pool still follows the ratio";
  EXPECT_EQ(s->slots, 201u) << "whole slots of the SSM bytes, +1";
}

TEST(HostPoolSizing, SsmBytesThatTakeTheWholeBudgetOrTooFewSlotsAreRefused) {
  host_pool_request r = base();
  r.host_bytes = 64ull << 20;
  r.ssm_bytes = r.host_bytes;
  auto s = size_host_pools(r);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.err().code, errc::invalid_config);
  EXPECT_NE(s.err().message.find("less than hicacheBytes"), std::string::npos) << s.err().message;
  r.ssm_bytes = 63ull * 49536;  // 63 + 1 slots: not more than the device's 64
  s = size_host_pools(r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.err().message.find("hicacheSsmBytes"), std::string::npos) << s.err().message;
  EXPECT_NE(s.err().message.find("larger than the device's 64 slots"), std::string::npos)
      << s.err().message;
  r.ssm_bytes = 64ull * 49536;  // 65 slots
  EXPECT_TRUE(size_host_pools(r).ok());
}

TEST(HostPoolSizing, ShortHostMemoryIsRefused) {
  host_pool_request r = base();
  r.host_ram_available = 1ull << 20;
  auto s = size_host_pools(r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.err().message.find("host memory"), std::string::npos);
}

TEST(HostPoolSizing, HostPoolsPastTheInt32IdsAreRefused) {
  host_pool_request r = base();
  r.device_kv_tokens = std::size_t{1} << 30;
  r.kv_bytes_per_token = 1;
  r.ratio = 2.0;  // 2^31 host tokens: the last ids would wrap
  auto s = size_host_pools(r);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.err().code, errc::invalid_config);
  EXPECT_NE(s.err().message.find("32-bit ids"), std::string::npos) << s.err().message;
  r.ratio = 1.9;  // below the last id (page 0 included)
  EXPECT_TRUE(size_host_pools(r).ok());
}

/// 16 tokens of 8 bytes (page 4) and 3 states of 24 bytes.
host_pool_sizes small_sizes() {
  host_pool_sizes sz;
  sz.kv_tokens = 16;
  sz.slots = 3;
  sz.kv_bytes_per_token = 8;
  sz.state_bytes = 24;
  return sz;
}

TEST(HostPools, APageIsContiguousAndSlotsDoNotOverlap) {
  host_pools h(small_sizes(), 4);
  auto page = h.kv(4, 4);
  EXPECT_EQ(page.size(), 32u);
  EXPECT_EQ(h.kv(5).data(), page.data() + 8) << "token 5 follows token 4 in its page";
  EXPECT_EQ(h.state(2).data(), h.state(1).data() + 24);
  EXPECT_EQ(h.kv(16, 4).size(), 32u) << "the last page is addressable";
}

/// The pools' bytes come from the source they are given (the node maps them:
/// gpu/anonymous_memory.hpp), start zeroed, and a source that gives less than asked is a
/// bad_alloc, which the node turns into an out_of_memory refusal of the open.
TEST(HostPools, BytesComeFromTheirSourceZeroedAndAShortOneIsRefused) {
  const host_pool_sizes sz = small_sizes();
  static std::size_t asked;
  asked = 0;
  host_pools h(sz, 4, [](std::size_t n) {
    asked += n;
    return heap_host_bytes(n);
  });
  EXPECT_EQ(asked, (16u + 4u) * 8u + 3u * 24u) << "page 0 included";
  for (std::byte b : h.kv_region())
    ASSERT_EQ(b, std::byte{0});
  for (std::byte b : h.state_region())
    ASSERT_EQ(b, std::byte{0});
  EXPECT_THROW(host_pools(sz, 4, [](std::size_t n) { return heap_host_bytes(n / 2); }),
               std::bad_alloc);
}

}  // namespace
}  // namespace hc::test
