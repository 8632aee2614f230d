// map_anonymous (gpu/anonymous_memory.hpp): zeroed, writable, unmapped with its last
// owner; a size the system refuses is a bad_alloc (the node's open then fails with
// out_of_memory and the node goes on).
#include <gtest/gtest.h>

#include <algorithm>
#include <new>

#include "gpu/anonymous_memory.hpp"

namespace hc::test {
namespace {

TEST(AnonymousMemory, IsZeroedAndWritable) {
  constexpr std::size_t n = (std::size_t{4} << 20) + 123;  // not a whole number of pages
  std::shared_ptr<std::byte> p = map_anonymous(n);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(std::all_of(p.get(), p.get() + n, [](std::byte b) { return b == std::byte{0}; }));
  std::fill(p.get(), p.get() + n, std::byte{0x5a});
  EXPECT_EQ(p.get()[n - 1], std::byte{0x5a});
  std::shared_ptr<std::byte> other = p;  // one mapping, two owners
  p.reset();
  EXPECT_EQ(other.get()[0], std::byte{0x5a});
}

TEST(AnonymousMemory, WhatCannotBeMappedIsABadAlloc) {
  EXPECT_THROW(map_anonymous(0), std::bad_alloc);
  EXPECT_THROW(map_anonymous(std::size_t{1} << 62), std::bad_alloc);  // 4 EiB
}

}  // namespace
}  // namespace hc::test
