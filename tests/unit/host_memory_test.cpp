// What a new instance's pools may take (actors/node/host_memory.hpp): a configured budget
// as it is, else MemAvailable less a reserve of 1/32 of MemTotal (at most 4 GiB), within
// what the node's cgroup memory limit still allows.
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

// In a container /proc/meminfo shows the machine: the cgroup's limit, less what the cgroup
// uses, is what the pools may take, less a thirty-second of the limit.
TEST(HostMemory, ACgroupLimitBelowTheMachineBoundsThePools) {
  const cgroup_memory pod{.limit = 16 * GiB, .available = 12 * GiB};
  EXPECT_EQ(memory_for_pools(200 * GiB, 512 * GiB, pod), 12 * GiB - GiB / 2);
  EXPECT_EQ(memory_for_pools(8 * GiB, 512 * GiB, pod), 8 * GiB - GiB / 2)
      << "the machine has less to give than the limit allows";
  EXPECT_EQ(memory_for_pools(200 * GiB, 512 * GiB, {.limit = 16 * GiB, .available = 0}), 1u)
      << "the cgroup is at its limit: refuse every pool";
  EXPECT_EQ(memory_for_pools(0, 0, pod), 12 * GiB - GiB / 2) << "no /proc/meminfo: the cgroup";
  EXPECT_EQ(memory_for_pools(200 * GiB, 512 * GiB, {}), 196 * GiB) << "no limit: the machine";
}

TEST(HostMemory, AConfiguredBudgetIsTakenAsItIs) {
  EXPECT_EQ(memory_for_pools(64 << 10), 64u << 10);
  EXPECT_GT(memory_for_pools(0), 0u) << "this machine's /proc/meminfo is read";
}

}  // namespace
}  // namespace hc::test
