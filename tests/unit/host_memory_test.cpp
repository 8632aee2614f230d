// What a new instance's pools may take (actors/node/host_memory.hpp): a configured budget
// as it is, else MemAvailable less a reserve of 1/32 of MemTotal (at most 4 GiB).
#include <gtest/gtest.h>

#include "actors/node/host_memory.hpp"

namespace hc::test {
namespace {

constexpr std::uint64_t GiB = std::uint64_t{1} << 30;

TEST(HostMemory, AReserveOfAThirtySecondOfTheMachineAtMostFourGiBStaysFree) {
  EXPECT_EQ(memory_for_pools(16 * GiB, 32 * GiB), 15 * GiB);
  EXPECT_EQ(memory_for_pools(100 * GiB, 1024 * GiB), 96 * GiB) << "capped at 4 GiB";
  EXPECT_EQ(memory_for_pools(GiB / 2, 32 * GiB), 1u) << "nothing beyond the reserve: refuse";
  EXPECT_EQ(memory_for_pools(0, 32 * GiB), 0u) << "unknown: no check";
}

TEST(HostMemory, AConfiguredBudgetIsTakenAsItIs) {
  EXPECT_EQ(memory_for_pools(64 << 10), 64u << 10);
  EXPECT_GT(memory_for_pools(0), 0u) << "this machine's /proc/meminfo is read";
}

}  // namespace
}  // namespace hc::test
