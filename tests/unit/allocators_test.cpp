// Allocators: FIFO reuse, page-aware extends, all-or-nothing, slot 0 reserved, groups.
// Groups: A. kv token  B. kv paged  C. slots  D. rows
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>

#include "actors/radix_cache/kv_allocator.hpp"
#include "actors/radix_cache/slot_allocator.hpp"

namespace hc {
namespace {

std::vector<kv_index> take(kv_allocator& a, std::size_t seq, kv_index last, std::size_t n) {
  std::vector<kv_index> out;
  EXPECT_TRUE(a.alloc_extend(seq, last, n, out));
  return out;
}

// ---- A ---------------------------------------------------------------------------------
TEST(KvTokenAllocator, FifoReuseAndAllOrNothing) {
  kv_allocator a(8, 1);
  EXPECT_EQ(a.available(), 8u);
  EXPECT_EQ(take(a, 0, 0, 3), (std::vector<kv_index>{1, 2, 3}));
  std::vector<kv_index> none;
  EXPECT_FALSE(a.alloc(6, none));
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(a.available(), 5u);
  const std::vector<kv_index> back{3, 1};
  ASSERT_TRUE(a.free(back).ok());
  EXPECT_EQ(take(a, 0, 0, 7), (std::vector<kv_index>{4, 5, 6, 7, 8, 3, 1}));
}

TEST(KvTokenAllocator, DoubleFreeAndRangeAreErrorsThatChangeNothing) {
  kv_allocator a(4, 1);
  auto got = take(a, 0, 0, 2);
  ASSERT_TRUE(a.free(got).ok());
  EXPECT_EQ(a.free(got).err().code, errc::double_free);
  const std::vector<kv_index> bad{0};
  EXPECT_EQ(a.free(bad).err().code, errc::invalid_argument);
  EXPECT_EQ(a.available(), 4u);
}

TEST(KvTokenAllocator, AnIdTwiceInOneFreeIsADoubleFreeThatChangesNothing) {
  kv_allocator a(4, 1);
  auto got = take(a, 0, 0, 3);  // 1, 2, 3
  const std::vector<kv_index> twice{1, 2, 1};
  EXPECT_EQ(a.free(twice).err().code, errc::double_free);
  EXPECT_EQ(a.available(), 1u);
  for (kv_index id : got)
    EXPECT_FALSE(a.is_free(id)) << id;
  ASSERT_TRUE(a.free(got).ok());
  EXPECT_EQ(take(a, 0, 0, 4), (std::vector<kv_index>{4, 1, 2, 3}));
}

// The marks are a bitset checked and set run by run (a run of consecutive ids a word at a
// time): runs across word boundaries, a bad id in a later run or inside a run, and an id
// twice in two runs must all be found, name the first bad id, and change nothing.
TEST(KvTokenAllocator, RunsOfIdsAcrossMarkWordsAreCheckedAsWholes) {
  kv_allocator a(300, 1);
  std::vector<kv_index> all;
  ASSERT_TRUE(a.alloc(300, all));  // 1..300
  const auto ids = [](kv_index from, kv_index to) {
    std::vector<kv_index> v;
    for (kv_index i = from; i <= to; ++i)
      v.push_back(i);
    return v;
  };
  const auto none_free = [&](const std::vector<kv_index>& v) {
    for (kv_index id : v)
      if (a.is_free(id)) return false;
    return true;
  };
  // Two runs, each across a 64-id word, then a run that repeats an id of the first.
  std::vector<kv_index> bad = ids(60, 140);
  const std::vector<kv_index> second = ids(190, 260);
  bad.insert(bad.end(), second.begin(), second.end());
  bad.push_back(100);
  auto r = a.free(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().code, errc::double_free);
  EXPECT_NE(r.err().message.find("kv index 100 "), std::string::npos) << r.err().message;
  EXPECT_TRUE(none_free(all)) << "nothing stays marked";
  EXPECT_EQ(a.available(), 0u);
  // A run that runs out of the pool names its first id beyond it.
  r = a.free(ids(290, 302));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().code, errc::invalid_argument);
  EXPECT_NE(r.err().message.find("kv index 301 "), std::string::npos) << r.err().message;
  EXPECT_TRUE(none_free(all));
  // The same runs, good: every id free, in the order given.
  ASSERT_TRUE(a.free(ids(60, 140)).ok());
  ASSERT_TRUE(a.free(second).ok());
  EXPECT_EQ(a.available(), 81u + 71u);
  for (kv_index id : all)
    EXPECT_EQ(a.is_free(id), (id >= 60 && id <= 140) || (id >= 190 && id <= 260)) << id;
  // A run overlapping freed ids: a double free of its first free id, nothing marked.
  r = a.free(ids(50, 70));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.err().message.find("kv index 60 "), std::string::npos) << r.err().message;
  EXPECT_FALSE(a.is_free(50));
  std::vector<kv_index> back;
  ASSERT_TRUE(a.alloc(152, back));
  const std::vector<kv_index> first = ids(60, 140);
  EXPECT_TRUE(std::equal(first.begin(), first.end(), back.begin())) << "FIFO order kept";
}

// ---- B ---------------------------------------------------------------------------------
// A tree node's ids, checked once as whole units (page 1: one run), are kept as runs and
// freed by free_runs from the runs' first ids: the same order, errors and refusals as
// free() of the ids.
TEST(KvTokenAllocator, WholeUnitsAreOneRunAndFreeAsFreeDoes) {
  kv_allocator a(16, 1), b(16, 1);
  const std::vector<kv_index> got = take(a, 0, 0, 10);  // 1..10
  ASSERT_EQ(take(b, 0, 0, 10), got);
  EXPECT_TRUE(a.is_whole_units(got));
  EXPECT_TRUE(a.is_whole_units({}));
  EXPECT_TRUE(a.is_whole_units(std::vector<kv_index>{5}));
  EXPECT_FALSE(a.is_whole_units(std::vector<kv_index>{1, 2, 4}));
  EXPECT_FALSE(a.is_whole_units(std::vector<kv_index>{2, 1}));
  std::vector<kv_index> long_run(100);
  for (std::size_t i = 0; i < long_run.size(); ++i)
    long_run[i] = static_cast<kv_index>(1000 + i);
  EXPECT_TRUE(a.is_whole_units(long_run));
  long_run[77] += 1;  // one id off, inside the vector part
  EXPECT_FALSE(a.is_whole_units(long_run));

  const std::vector<kv_index> mid{3, 4, 5, 6};
  ASSERT_TRUE(a.free_runs(std::vector<kv_index>{3}, 4).ok());
  ASSERT_TRUE(b.free(mid).ok());
  const std::vector<kv_index> overlap{6, 7};  // 6 is free already: nothing changes
  const status ea = a.free_runs(std::vector<kv_index>{6}, 2), eb = b.free(overlap);
  ASSERT_FALSE(ea.ok());
  EXPECT_EQ(ea.err().code, errc::double_free);
  EXPECT_EQ(ea.err().message, eb.err().message);
  EXPECT_FALSE(a.is_free(7));
  ASSERT_EQ(a.free_runs(std::vector<kv_index>{16}, 1).err().code, errc::double_free)
      << "16 was never handed out";
  const std::vector<kv_index> past{0, 1};  // 0 is out of range: 1 stays held
  const status ra = a.free_runs(std::vector<kv_index>{0}, 2), rb = b.free(past);
  ASSERT_FALSE(ra.ok());
  EXPECT_EQ(ra.err().code, errc::invalid_argument);
  EXPECT_EQ(ra.err().message, rb.err().message);
  EXPECT_FALSE(a.is_free(1));
  ASSERT_TRUE(a.free_runs(std::vector<kv_index>{7}, 4).ok());
  ASSERT_TRUE(b.free(std::vector<kv_index>{7, 8, 9, 10}).ok());
  // Several runs at page 1 (the tree keeps one, but the call takes any): the ids in order,
  // all or nothing.
  const status twice = a.free_runs(std::vector<kv_index>{2, 2}, 1);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.err().message, b.free(std::vector<kv_index>{2, 2}).err().message);
  EXPECT_FALSE(a.is_free(2)) << "refused: nothing freed";
  ASSERT_TRUE(a.free_runs(std::vector<kv_index>{2, 1}, 1).ok());
  ASSERT_TRUE(b.free(std::vector<kv_index>{2, 1}).ok());
  EXPECT_EQ(take(a, 0, 0, a.available()), take(b, 0, 0, b.available())) << "the same reuse order";
}

// A tree node's encoded ids are freed run by run (free_id_runs): the same order, errors and
// refusals as free() of the ids, twin allocator beside it.
TEST(KvTokenAllocator, RunsOfAnEncodedListFreeAsFreeDoes) {
  kv_allocator a(32, 1), b(32, 1);
  const std::vector<kv_index> got = take(a, 0, 0, 20);  // 1..20
  ASSERT_EQ(take(b, 0, 0, 20), got);
  const auto ids_of = [](const std::vector<id_run>& runs) {
    std::vector<kv_index> ids;
    for (const id_run& r : runs)
      for (std::uint32_t i = 0; i < r.length; ++i)
        ids.push_back(r.first + static_cast<kv_index>(i));
    return ids;
  };
  const std::vector<id_run> ok{{12, 3}, {4, 1}, {6, 2}};  // 12..14, 4, 6..7
  ASSERT_TRUE(a.free_id_runs(ok).ok());
  ASSERT_TRUE(b.free(ids_of(ok)).ok());
  for (const std::vector<id_run>& bad :
       std::vector<std::vector<id_run>>{{{1, 2}, {13, 1}},    // 13 is free already
                                        {{1, 3}, {2, 1}},     // 2 twice in one call
                                        {{18, 3}, {21, 40}},  // past the pool
                                        {{0, 2}}}) {          // 0 is never an id
    const status ea = a.free_id_runs(bad), eb = b.free(ids_of(bad));
    ASSERT_FALSE(ea.ok());
    EXPECT_EQ(ea.err().code, eb.err().code);
    EXPECT_EQ(ea.err().message, eb.err().message);
    EXPECT_FALSE(a.is_free(1)) << "refused: nothing freed";
  }
  const std::vector<id_run> rest{{1, 3}, {5, 1}, {8, 4}, {15, 6}};
  ASSERT_TRUE(a.free_id_runs(rest).ok());
  ASSERT_TRUE(b.free(ids_of(rest)).ok());
  EXPECT_EQ(take(a, 0, 0, a.available()), take(b, 0, 0, b.available())) << "the same reuse order";
}

TEST(KvPagedAllocator, ExtendFillsThePartialPageThenTakesWholePages) {
  kv_allocator a(16, 4);  // pages 1..4
  EXPECT_EQ(a.available(), 16u);
  auto first = take(a, 0, 0, 6);  // pages 1, 2
  EXPECT_EQ(first, (std::vector<kv_index>{4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(a.available(), 8u);
  auto more = take(a, 6, 9, 3);  // fills 10, 11 then page 3
  EXPECT_EQ(more, (std::vector<kv_index>{10, 11, 12}));
  EXPECT_EQ(a.pages_needed(9, 3), 0u);
  EXPECT_EQ(a.pages_needed(8, 1), 1u);
  EXPECT_EQ(a.pages_needed(8, 0), 0u);
}

// A count near 2^64 is refused like any count the pool cannot hold, changing nothing: the
// page arithmetic (seq_len + n + P - 1) wrapped to a few pages, and the extend then
// reserved n ids — std::length_error out of an in-process replay of a trace with such an
// alloc_kv.
TEST(KvPagedAllocator, ACountNearTwoToThe64IsRefusedNotWrapped) {
  constexpr std::size_t huge = std::numeric_limits<std::size_t>::max();
  for (const std::size_t page : {1u, 4u, 64u}) {
    SCOPED_TRACE("page " + std::to_string(page));
    kv_allocator a(1024, page);
    std::vector<kv_index> row;
    ASSERT_TRUE(a.alloc_extend(0, 0, 5, row));
    const std::size_t free_before = a.available();
    for (const std::size_t n : {huge, huge - 1, huge - page, huge / 2 + 1}) {
      EXPECT_GE(a.pages_needed(5, n), n / page - 1) << n;
      EXPECT_FALSE(a.alloc_extend(5, row.back(), n, row)) << n;
      EXPECT_EQ(row.size(), 5u);
      EXPECT_EQ(a.available(), free_before);
    }
  }
}

// A request's row grows by one id per decode step; the extend must not copy the whole row
// each time (it did at page > 1: an exact reserve(size + n) before the appends). Counted by
// the reallocations the row sees, at both page kinds, with the ids checked as they go.
TEST(KvPagedAllocator, DecodeStepsGrowTheRowGeometrically) {
  for (const std::size_t page : {1u, 4u, 64u}) {
    SCOPED_TRACE("page " + std::to_string(page));
    kv_allocator a(1 << 16, page);
    const std::size_t free_at_start = a.available();
    std::vector<kv_index> row;
    ASSERT_TRUE(a.alloc_extend(0, 0, 100, row));  // the prefill
    constexpr std::size_t steps = 4096;
    std::size_t reallocations = 0;
    const kv_index* data = row.data();
    for (std::size_t i = 0; i < steps; ++i) {
      const std::size_t len = row.size();
      ASSERT_TRUE(a.alloc_extend(len, row.back(), 1, row));
      ASSERT_EQ(row.size(), len + 1);
      if (len % page != 0) {  // inside a page the next id follows the last
        ASSERT_EQ(row[len], row[len - 1] + 1) << "step " << i;
      } else {
        ASSERT_EQ(row[len] % static_cast<kv_index>(page), 0) << "step " << i << ": a page start";
      }
      if (row.data() != data) {
        ++reallocations;
        data = row.data();
      }
    }
    // Doubling from 100 to 4,196 ids takes ~6 reallocations; one per step would be 4,096.
    EXPECT_LE(reallocations, 16u);
    EXPECT_EQ(free_at_start - a.available(), (4196 + page - 1) / page * page)
        << "the row took whole pages, each once";
  }
}

TEST(KvPagedAllocator, FreePrependsSortedUniquePages) {
  kv_allocator a(16, 4);
  auto x = take(a, 0, 0, 16);                      // all four pages
  const std::vector<kv_index> some{13, 5, 14, 6};  // pages 3 and 1
  ASSERT_TRUE(a.free(some).ok());
  EXPECT_EQ(take(a, 0, 0, 8), (std::vector<kv_index>{4, 5, 6, 7, 12, 13, 14, 15}));
  std::vector<kv_index> none;
  EXPECT_FALSE(a.alloc_extend(0, 0, 1, none)) << "no page left";
}

// free() maps runs of consecutive ids to pages a page at a time: a run over several pages,
// a run that starts and ends inside pages, and runs out of order give the same sorted unique
// pages the id-by-id reading gives; a run reaching page 0 or beyond the pool is refused whole.
TEST(KvPagedAllocator, RunsOverSeveralPagesFreeEachPageOnce) {
  kv_allocator a(64, 4);  // pages 1..16
  auto all = take(a, 0, 0, 64);
  std::vector<kv_index> ids;
  for (kv_index i = 41; i <= 50; ++i)  // pages 10 (41..43), 11, 12 (48..50)
    ids.push_back(i);
  for (kv_index i = 8; i <= 19; ++i)  // pages 2, 3, 4
    ids.push_back(i);
  ids.push_back(60);  // page 15
  ids.push_back(9);   // page 2 again
  ASSERT_TRUE(a.free(ids).ok());
  EXPECT_EQ(a.available(), 7u * 4);
  EXPECT_EQ(take(a, 0, 0, 28),
            (std::vector<kv_index>{8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 40, 41,
                                   42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 60, 61, 62, 63}));
  std::vector<kv_index> low;
  for (kv_index i = 2; i <= 9; ++i)  // reaches page 0
    low.push_back(i);
  EXPECT_EQ(a.free(low).err().code, errc::invalid_argument);
  std::vector<kv_index> high;
  for (kv_index i = 60; i <= 70; ++i)  // beyond page 16
    high.push_back(i);
  EXPECT_EQ(a.free(high).err().code, errc::invalid_argument);
  EXPECT_EQ(a.available(), 0u) << "refused frees change nothing";
}

// Paged: whole units are whole pages (each aligned group of P ids one page's ids, in
// order); free_runs reads one id per page and frees as free() does.
TEST(KvPagedAllocator, WholePagesFreeAsFreeDoes) {
  kv_allocator a(64, 4), b(64, 4);                      // pages 1..16
  const std::vector<kv_index> got = take(a, 0, 0, 12);  // pages 1, 2, 3: ids 4..15
  ASSERT_EQ(take(b, 0, 0, 12), got);
  EXPECT_TRUE(a.is_whole_units(got));
  EXPECT_FALSE(a.is_whole_units(std::vector<kv_index>(got.begin(), got.begin() + 6)))
      << "half a page";
  EXPECT_FALSE(a.is_whole_units(std::vector<kv_index>{5, 6, 7, 8})) << "not page-aligned";
  EXPECT_FALSE(a.is_whole_units(std::vector<kv_index>{4, 5, 7, 6})) << "a page out of order";
  EXPECT_FALSE(a.is_whole_units(std::vector<kv_index>{-4, -3, -2, -1}));
  const std::vector<kv_index> swapped{12, 13, 14, 15, 4, 5, 6, 7};  // pages 3, 1
  EXPECT_TRUE(a.is_whole_units(swapped)) << "whole pages in any order";
  ASSERT_TRUE(a.free_runs(std::vector<kv_index>{12, 4}, 4).ok());
  ASSERT_TRUE(b.free(swapped).ok());
  const status ea = a.free_runs(std::vector<kv_index>{8, 12}, 4);
  const status eb = b.free(std::vector<kv_index>{8, 9, 10, 11, 12, 13, 14, 15});
  ASSERT_FALSE(ea.ok());
  EXPECT_EQ(ea.err().message, eb.err().message) << "page 3 twice";
  EXPECT_FALSE(a.is_free(8)) << "page 2 stays held";
  EXPECT_EQ(take(a, 0, 0, a.available()), take(b, 0, 0, b.available())) << "the same reuse order";
}

TEST(KvPagedAllocator, PageZeroIsNeverHandedOut) {
  kv_allocator a(8, 4);
  auto all = take(a, 0, 0, 8);
  for (kv_index k : all)
    EXPECT_GE(k, 4);
}

// ---- C ---------------------------------------------------------------------------------
TEST(SlotAllocator, SlotZeroReservedFifoNoPartial) {
  slot_allocator s(4);
  std::vector<slot_id> got;
  ASSERT_TRUE(s.alloc(2, got));
  EXPECT_EQ(got, (std::vector<slot_id>{1, 2}));
  EXPECT_FALSE(s.alloc(3, got));
  EXPECT_EQ(got.size(), 2u);
  ASSERT_TRUE(s.free_one(1).ok());
  EXPECT_EQ(s.free_one(1).err().code, errc::double_free);
  EXPECT_EQ(s.free_one(0).err().code, errc::invalid_argument);
  got.clear();
  ASSERT_TRUE(s.alloc(3, got));
  EXPECT_EQ(got, (std::vector<slot_id>{3, 4, 1}));
  EXPECT_EQ(s.alloc_one(), no_slot);
}

TEST(SlotAllocator, GroupPreallocationPopsFromTheGroupAndReturnsTheRest) {
  slot_allocator s(6);
  ASSERT_TRUE(s.group_begin(3));  // 1, 2, 3 reserved
  EXPECT_EQ(s.available(), 3u);
  EXPECT_EQ(s.alloc_one(), 1);
  EXPECT_EQ(s.alloc_one(), 2);
  s.group_end();  // 3 goes to the end of the free list
  std::vector<slot_id> rest;
  ASSERT_TRUE(s.alloc(4, rest));
  EXPECT_EQ(rest, (std::vector<slot_id>{4, 5, 6, 3}));
  EXPECT_FALSE(s.group_begin(1)) << "all or nothing";
  EXPECT_FALSE(s.group_active());
}

// ---- D ---------------------------------------------------------------------------------
TEST(RowAllocator, FrontAllocAppendFree) {
  row_allocator r(3);
  EXPECT_EQ(r.alloc(), 1);
  EXPECT_EQ(r.alloc(), 2);
  ASSERT_TRUE(r.free(1).ok());
  EXPECT_EQ(r.alloc(), 3);
  EXPECT_EQ(r.alloc(), 1);
  EXPECT_EQ(r.alloc(), no_row);
  EXPECT_EQ(r.free(7).err().code, errc::invalid_argument);
}

}  // namespace
}  // namespace hc
