// How client_store::set_from / get_into cut a batch into parts (schema/store_parts.hpp):
// whole values, at most part_bytes each (a larger value alone), the flat segment index
// the caller's addresses follow, the arena range each part covers, and checks of the
// caller's input before anything is copied.
#include "schema/store_parts.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace hc::test {
namespace {

using store_parts::part;

std::vector<store_entry> values(const std::vector<std::vector<store_segment>>& segs) {
  std::vector<store_entry> out;
  for (std::size_t i = 0; i < segs.size(); ++i)
    out.push_back({std::string("k").append(std::to_string(i)), segs[i]});
  return out;
}

TEST(StoreParts, ValuesAreGroupedWholeUpToThePartSize) {
  // Four values of 3 bytes one after another, the second in two segments.
  const auto e = values({{{0, 3}}, {{3, 1}, {4, 2}}, {{6, 3}}, {{9, 3}}});
  auto p = store_parts::split(e, 6);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].first, 0u);
  EXPECT_EQ(p[0].last, 2u);
  EXPECT_EQ(p[0].first_segment, 0u);
  EXPECT_EQ(p[0].lo, 0u);
  EXPECT_EQ(p[0].hi, 6u);
  EXPECT_EQ(p[1].first, 2u);
  EXPECT_EQ(p[1].last, 4u);
  EXPECT_EQ(p[1].first_segment, 3u) << "the first value's one segment and the second's two";
  EXPECT_EQ(p[1].lo, 6u);
  EXPECT_EQ(p[1].hi, 12u);
  EXPECT_TRUE(store_parts::disjoint(p[0], p[1]));

  EXPECT_EQ(store_parts::split(e, 0).size(), 1u) << "0: one part";
  auto few = store_parts::split(e, 0, 3);
  ASSERT_EQ(few.size(), 2u) << "at most three values a part";
  EXPECT_EQ(few[0].last, 3u);
  EXPECT_EQ(few[1].first, 3u);
  EXPECT_EQ(few[1].first_segment, 4u);
  EXPECT_EQ(store_parts::split(e, 6, 1).size(), 4u) << "both limits";
  EXPECT_EQ(store_parts::split(e, 1 << 20).size(), 1u);
  EXPECT_EQ(store_parts::split(e, 5).size(), 4u) << "no two values fit 5 bytes";
  EXPECT_TRUE(store_parts::split({}, 6).empty());
}

TEST(StoreParts, AValueLargerThanAPartIsAPartOfItsOwn) {
  const auto e = values({{{0, 2}}, {{2, 100}}, {{102, 2}}, {{104, 2}}});
  auto p = store_parts::split(e, 4);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].last, 1u);
  EXPECT_EQ(p[1].first, 1u);
  EXPECT_EQ(p[1].last, 2u);
  EXPECT_EQ(p[2].first, 2u);
  EXPECT_EQ(p[2].last, 4u);
}

TEST(StoreParts, PartsWhoseArenaRangesMeetAreNotDisjoint) {
  // Values laid out in reused arena space: each part at offset 0.
  const auto e = values({{{0, 8}}, {{0, 8}}, {{4, 8}}, {{16, 8}}});
  auto p = store_parts::split(e, 8);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_FALSE(store_parts::disjoint(p[0], p[1]));
  EXPECT_FALSE(store_parts::disjoint(p[1], p[2])) << "[0,8) and [4,12) meet";
  EXPECT_TRUE(store_parts::disjoint(p[2], p[3])) << "[4,12) and [16,24) do not";
  EXPECT_TRUE(store_parts::disjoint(p[3], p[2]));
  const part empty{0, 1, 0, 0, 0};
  EXPECT_TRUE(store_parts::disjoint(empty, p[0])) << "a part without bytes meets none";
}

TEST(StoreParts, AValueWhoseArenaBytesMeetThePartsStartsTheNext) {
  // No size limit: value 2 ([4,12)) meets values 0 and 1, value 3 ([16,24)) meets none of
  // part 2's, value 4 ([20,21)) meets value 3's.
  const auto e = values({{{0, 8}}, {{8, 8}}, {{4, 8}}, {{16, 8}}, {{20, 1}}});
  auto p = store_parts::split(e, 0);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].last, 2u);
  EXPECT_EQ(p[1].first, 2u);
  EXPECT_EQ(p[1].last, 4u);
  EXPECT_EQ(p[1].first_segment, 2u);
  EXPECT_EQ(p[2].first, 4u);
  EXPECT_FALSE(store_parts::disjoint(p[1], p[2]));

  // Interleaved values whose bounding ranges cross but whose bytes do not: one part.
  const auto interleaved = values({{{0, 4}, {8, 4}}, {{4, 4}, {12, 4}}, {{16, 0}}, {{1, 0}}});
  EXPECT_EQ(store_parts::split(interleaved, 0).size(), 1u)
      << "segments, not ranges, decide; a segment of no bytes meets nothing";
  // Values out of arena order: [16,24), then [0,8) (below what the part took, meeting
  // none of it), then [4,12) (meeting [0,8)).
  auto back_and_forth = store_parts::split(values({{{16, 8}}, {{0, 8}}, {{4, 8}}}), 0);
  ASSERT_EQ(back_and_forth.size(), 2u);
  EXPECT_EQ(back_and_forth[0].last, 2u);
  EXPECT_EQ(back_and_forth[0].lo, 0u);
  EXPECT_EQ(back_and_forth[0].hi, 24u);
  // Every value at offset 0: one value a part, whatever the size limit.
  EXPECT_EQ(store_parts::split(values({{{0, 8}}, {{0, 8}}, {{0, 8}}}), 1 << 20).size(), 3u);
}

// The cut and the checks against the plainest statement of their rules, on random layouts
// (values often sharing arena bytes, segments out of order or empty, part sizes from a few
// bytes to none, one to five values a part or no limit): a new part when the value would
// pass the size or the count, or when one of its segments meets one of a value already in
// the part; a value refused when two of its own segments meet.
TEST(StoreParts, TheCutAndTheChecksAgreeWithTheirRulesStatedPlainly) {
  std::mt19937_64 rng(27112026);
  auto draw = [&](std::uint64_t lo, std::uint64_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  auto meet = [](const store_segment& a, const store_segment& b) {
    return a.length != 0 && b.length != 0 && a.offset < b.offset + b.length &&
           b.offset < a.offset + a.length;
  };
  for (int round = 0; round < 5000; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::uint64_t window = draw(0, 1) == 0 ? 64 : 4096;  // small: values often meet
    std::vector<store_entry> e(draw(0, 16));
    std::size_t segments = 0;
    bool own_overlap = false;
    for (auto& v : e) {
      v.segments.resize(draw(1, 4));
      for (auto& s : v.segments)
        s = {draw(0, window), draw(0, 3) == 0 ? 0 : draw(1, 48)};
      segments += v.segments.size();
      for (std::size_t a = 0; a < v.segments.size(); ++a)
        for (std::size_t b = a + 1; b < v.segments.size(); ++b)
          own_overlap = own_overlap || meet(v.segments[a], v.segments[b]);
    }
    const std::vector<std::uintptr_t> addresses(segments, 64);
    ASSERT_EQ(store_parts::check(e, addresses, window + 48).ok(), !own_overlap);
    if (own_overlap) continue;

    const std::uint64_t limit = draw(0, 2) == 0 ? 0 : draw(1, 200);
    const std::size_t most = draw(0, 2) == 0 ? draw(1, 5) : 0;  // values a part
    std::vector<part> want;
    std::uint64_t bytes = 0;
    std::size_t segment = 0;
    for (std::size_t i = 0; i < e.size(); ++i) {
      std::uint64_t size = 0;
      for (const auto& s : e[i].segments)
        size += s.length;
      bool meets = false;
      if (!want.empty())
        for (std::size_t j = want.back().first; j < i; ++j)
          for (const auto& a : e[j].segments)
            for (const auto& b : e[i].segments)
              meets = meets || meet(a, b);
      if (want.empty() || (limit != 0 && bytes != 0 && bytes + size > limit) ||
          (most != 0 && i - want.back().first == most) || meets) {
        want.push_back(part{i, i, segment, 0, 0});
        bytes = 0;
      }
      part& p = want.back();
      p.last = i + 1;
      for (const auto& s : e[i].segments) {
        if (s.length == 0) continue;
        p.lo = p.lo == p.hi ? s.offset : std::min(p.lo, s.offset);
        p.hi = std::max(p.hi, s.offset + s.length);
      }
      bytes += size;
      segment += e[i].segments.size();
    }
    const auto got = store_parts::split(e, limit, most);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      EXPECT_EQ(got[k].first, want[k].first) << "part " << k;
      EXPECT_EQ(got[k].last, want[k].last) << "part " << k;
      EXPECT_EQ(got[k].first_segment, want[k].first_segment) << "part " << k;
      EXPECT_EQ(got[k].lo, want[k].lo) << "part " << k;
      EXPECT_EQ(got[k].hi, want[k].hi) << "part " << k;
    }
  }
}

TEST(StoreParts, BadInputIsRefusedNamingTheProblem) {
  std::vector<std::byte> mem(64);
  const auto at = reinterpret_cast<std::uintptr_t>(mem.data());
  const auto e = values({{{0, 8}}, {{8, 8}, {16, 0}}});
  const std::vector<std::uintptr_t> three{at, at + 8, 0};  // a null address of 0 bytes is fine
  EXPECT_TRUE(store_parts::check(e, three, 64).ok());

  auto few = store_parts::check(e, std::vector<std::uintptr_t>{at, at}, 64);
  ASSERT_FALSE(few.ok());
  EXPECT_EQ(few.err().code, errc::invalid_argument);
  EXPECT_NE(few.err().message.find("2 addresses for 3 segments"), std::string::npos)
      << few.err().message;
  auto outside = store_parts::check(e, three, 12);
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.err().message.find("entry 1"), std::string::npos) << outside.err().message;
  EXPECT_NE(outside.err().message.find("outside the 12-byte arena"), std::string::npos);
  const std::vector<std::uintptr_t> null_first{0, at, at};
  auto null = store_parts::check(e, null_first, 64);
  ASSERT_FALSE(null.ok());
  EXPECT_NE(null.err().message.find("address 0"), std::string::npos) << null.err().message;
  const auto overlapping = values({{{0, 8}}, {{16, 8}, {20, 8}}});
  auto twice = store_parts::check(overlapping, std::vector<std::uintptr_t>{at, at, at + 8}, 64);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.err().message.find("entry 1: two of its segments overlap"), std::string::npos)
      << twice.err().message;
  EXPECT_FALSE(
      store_parts::check(values({{{0, 8}, {7, 4}}}), std::vector<std::uintptr_t>{at, at}, 64).ok())
      << "in arena order, one byte shared";
  EXPECT_TRUE(
      store_parts::check(values({{{0, 8}, {8, 4}}}), std::vector<std::uintptr_t>{at, at}, 64).ok())
      << "in arena order, touching";
  const auto reversed = values({{{40, 8}, {30, 10}, {0, 30}}});
  EXPECT_TRUE(store_parts::check(reversed, std::vector<std::uintptr_t>{at, at, at}, 64).ok())
      << "segments out of arena order that do not overlap";
  const auto reversed_overlapping = values({{{40, 8}, {30, 11}, {0, 30}}});
  EXPECT_FALSE(
      store_parts::check(reversed_overlapping, std::vector<std::uintptr_t>{at, at, at}, 64).ok())
      << "[30,41) meets [40,48)";
  EXPECT_TRUE(
      store_parts::check(values({{{0, 8}}, {{0, 8}}}), std::vector<std::uintptr_t>{at, at}, 64)
          .ok())
      << "two values in the same arena bytes are fine: they go in parts of their own";
  const auto huge = values({{{UINT64_MAX - 2, 8}}});
  EXPECT_FALSE(store_parts::check(huge, std::vector<std::uintptr_t>{at}, 64).ok())
      << "an offset near 2^64 does not wrap into the arena";
}

TEST(StoreParts, CopiesGoSegmentBySegmentAndSkipAbsentValues) {
  std::vector<std::byte> arena(32), src(32), dst(32, std::byte{0xee});
  for (std::size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<std::byte>(i + 1);
  const auto s = reinterpret_cast<std::uintptr_t>(src.data());
  const auto d = reinterpret_cast<std::uintptr_t>(dst.data());
  // Value 0: src[0..4) -> arena[8..12); value 1: src[4..6) and src[6..8) -> arena[0..2), [20..22).
  const auto e = values({{{8, 4}}, {{0, 2}, {20, 2}}});
  const auto p = store_parts::split(e, 0);
  ASSERT_EQ(p.size(), 1u);
  store_parts::copy_in(p[0], e, std::vector<std::uintptr_t>{s, s + 4, s + 6}, arena);
  EXPECT_EQ(arena[8], std::byte{1});
  EXPECT_EQ(arena[11], std::byte{4});
  EXPECT_EQ(arena[0], std::byte{5});
  EXPECT_EQ(arena[21], std::byte{8});

  store_parts::copy_out(p[0], e, std::vector<std::uintptr_t>{d, d + 4, d + 6}, arena,
                        std::vector<bool>{false, true});
  EXPECT_EQ(dst[0], std::byte{0xee}) << "an absent value's bytes are not written";
  EXPECT_EQ(dst[3], std::byte{0xee});
  EXPECT_EQ(dst[4], std::byte{5});
  EXPECT_EQ(dst[5], std::byte{6});
  EXPECT_EQ(dst[6], std::byte{7});
  EXPECT_EQ(dst[7], std::byte{8});
}

}  // namespace
}  // namespace hc::test
