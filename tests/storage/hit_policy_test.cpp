// The v2 multi-pool existence semantics (integration.md §1.4) and the L3 value header.
#include <gtest/gtest.h>

#include <cstring>

#include "storage/hit_policy.hpp"
#include "storage/value_codec.hpp"

namespace hc::test {
namespace {

using sizes = std::vector<std::size_t>;
const bool T = true, F = false;

pool_presence trailing(std::vector<bool> present, std::size_t n = 1) {
  return {hit_policy::trailing_pages, n, std::move(present)};
}
pool_presence all_pages(std::vector<bool> present) {
  return {hit_policy::all_pages, 1, std::move(present)};
}

TEST(HitPolicy, KvAloneIsItsLeadingRun) {
  EXPECT_EQ(restorable_prefix_pages({T, T, T, F, T}, {}), (sizes{1, 2, 3}));
  EXPECT_EQ(usable_pages({T, T, T, F, T}, {}), 3u);
}

TEST(HitPolicy, NoKvMeansNothingAndPoolsAreNotConsulted) {
  const std::vector<pool_presence> pools{trailing({T, T})};
  EXPECT_TRUE(restorable_prefix_pages({}, pools).empty());
  EXPECT_TRUE(restorable_prefix_pages({F, T}, pools).empty());
  EXPECT_EQ(usable_pages({F, T}, pools), 0u);
}

TEST(HitPolicy, TrailingStateOnlyAtItsBoundaries) {
  // SSM states stored at node boundaries 2 and 4 (pages 1 and 3): sparse set with holes.
  const std::vector<pool_presence> pools{trailing({F, T, F, T})};
  EXPECT_EQ(restorable_prefix_pages({T, T, T, T}, pools), (sizes{2, 4}));
  EXPECT_EQ(usable_pages({T, T, T, F}, pools), 2u) << "KV stops at 3: the hit truncates to 2";
}

TEST(HitPolicy, MultiPageWindow) {
  const std::vector<pool_presence> pools{trailing({F, T, T, F, T, T}, 2)};
  EXPECT_EQ(restorable_prefix_pages({T, T, T, T, T, T}, pools), (sizes{3, 6}));
}

TEST(HitPolicy, AllPagesTruncatesATrailingPool) {
  const std::vector<pool_presence> pools{all_pages({T, T, T, F, T}), trailing({F, F, T, F, T})};
  EXPECT_EQ(restorable_prefix_pages({T, T, T, T, T}, pools), (sizes{3}));
}

TEST(HitPolicy, DisjointCheckpointsIntersectToNothing) {
  const std::vector<pool_presence> pools{trailing({T, F}), trailing({F, T})};
  EXPECT_TRUE(restorable_prefix_pages({T, T}, pools).empty());
  EXPECT_EQ(usable_pages({T, T}, pools), 0u);
}

std::vector<std::byte> bytes_of(const char* s) {
  std::vector<std::byte> v(std::strlen(s));
  std::memcpy(v.data(), s, v.size());
  return v;
}

TEST(ValueCodec, RoundTripsAndRejectsEveryKindOfDamage) {
  const auto payload = bytes_of("state of a 64-token prefix");
  std::vector<std::byte> stored;
  l3::encode_value(payload, stored);
  ASSERT_EQ(stored.size(), l3::value_header_bytes + payload.size());
  auto back = l3::decode_value(stored);
  ASSERT_TRUE(back.ok()) << back.err().message;
  EXPECT_TRUE(std::equal(back->begin(), back->end(), payload.begin(), payload.end()));

  auto damaged = stored;
  damaged.back() ^= std::byte{1};
  auto r = l3::decode_value(damaged);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.err().message.find("checksum"), std::string::npos);
  damaged = stored;
  damaged.pop_back();
  EXPECT_NE(l3::decode_value(damaged).err().message.find("holds"), std::string::npos);
  damaged = stored;
  damaged[0] = std::byte{0};
  EXPECT_NE(l3::decode_value(damaged).err().message.find("magic"), std::string::npos);
  damaged = stored;
  damaged[4] = std::byte{9};
  EXPECT_NE(l3::decode_value(damaged).err().message.find("version"), std::string::npos);
  EXPECT_FALSE(l3::decode_value(std::span<const std::byte>(stored.data(), 5)).ok());
  std::vector<std::byte> empty_stored;
  l3::encode_value({}, empty_stored);
  EXPECT_TRUE(l3::decode_value(empty_stored).ok()) << "an empty payload is a valid value";
}

}  // namespace
}  // namespace hc::test
