// The memory limit of a process's cgroups (actors/node/cgroup_memory.hpp), read from
// hierarchies laid out as the kernel mounts them — cgroup v2 (a container's own namespace,
// or a path under the host's root), v1's memory controller, a hybrid of both — in a
// temporary directory.
#include "actors/node/cgroup_memory.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/support/temp_dir.hpp"

namespace hc::test {
namespace {

namespace fs = std::filesystem;
constexpr std::uint64_t MiB = std::uint64_t{1} << 20;

/// A cgroup directory with its memory files (v2 names unless `v1`); an empty value leaves
/// the file out.
void level(const fs::path& dir, const std::string& limit, std::uint64_t usage,
           std::uint64_t inactive_file, bool v1 = false) {
  fs::create_directories(dir);
  if (!limit.empty())
    std::ofstream(dir / (v1 ? "memory.limit_in_bytes" : "memory.max")) << limit << "\n";
  std::ofstream(dir / (v1 ? "memory.usage_in_bytes" : "memory.current")) << usage << "\n";
  std::ofstream(dir / "memory.stat")
      << "anon 1\n"
      << (v1 ? "total_inactive_file " : "inactive_file ") << inactive_file << "\nfile 2\n";
}

void v2_root(const fs::path& root) {
  fs::create_directories(root);
  std::ofstream(root / "cgroup.controllers") << "cpu memory pids\n";
}

TEST(CgroupMemory, AContainersOwnV2NamespaceIsReadAtTheMountsRoot) {
  temp_dir t;
  v2_root(t.path());
  level(t.path(), std::to_string(1024 * MiB), 300 * MiB, 100 * MiB);
  const cgroup_memory m = cgroup_memory_at("0::/\n", t.path());
  EXPECT_EQ(m.limit, 1024 * MiB);
  EXPECT_EQ(m.available, 824 * MiB) << "the limit less the working set (usage less inactive file)";
}

TEST(CgroupMemory, EveryLevelUpToTheRootApplies) {
  temp_dir t;
  v2_root(t.path());
  level(t.path() / "kubepods", "max", 40000 * MiB, 0);
  level(t.path() / "kubepods" / "pod1", std::to_string(2048 * MiB), 1536 * MiB, 0);
  level(t.path() / "kubepods" / "pod1" / "c1", std::to_string(4096 * MiB), 512 * MiB, 0);
  const cgroup_memory m = cgroup_memory_at("0::/kubepods/pod1/c1\n", t.path());
  EXPECT_EQ(m.limit, 2048 * MiB) << "the pod's limit is tighter than its container's";
  EXPECT_EQ(m.available, 512 * MiB) << "what the pod still allows";
}

TEST(CgroupMemory, NoLimitAnywhereIsNone) {
  temp_dir t;
  v2_root(t.path());
  level(t.path() / "user.slice", "max", 100 * MiB, 0);
  EXPECT_EQ(cgroup_memory_at("0::/user.slice\n", t.path()).limit, 0u);
  EXPECT_EQ(cgroup_memory_at("", t.path()).limit, 0u) << "no /proc/self/cgroup";
  EXPECT_EQ(cgroup_memory_at("0::/\n", t.path() / "nothing-mounted").limit, 0u);
}

TEST(CgroupMemory, V1sMemoryControllerIsReadAndItsNoLimitValueIsNone) {
  temp_dir t;
  const fs::path mem = t.path() / "memory";
  level(mem, "9223372036854771712", 5000 * MiB, 0, true);  // v1's "no limit"
  level(mem / "docker" / "abc", std::to_string(512 * MiB), 100 * MiB, 50 * MiB, true);
  v2_root(t.path() / "unified");  // a hybrid host: v2 mounted too, without the controller
  const cgroup_memory m =
      cgroup_memory_at("9:name=systemd:/\n4:memory:/docker/abc\n0::/\n", t.path());
  EXPECT_EQ(m.limit, 512 * MiB);
  EXPECT_EQ(m.available, 462 * MiB);
}

TEST(CgroupMemory, APathTheMountDoesNotShowIsTheMountsOwnCgroup) {
  temp_dir t;
  // Docker on v1 without a cgroup namespace: /proc/self/cgroup names the host's path, the
  // container's mount shows its own cgroup at the mount's root.
  level(t.path() / "memory", std::to_string(256 * MiB), 56 * MiB, 0, true);
  const cgroup_memory m = cgroup_memory_at("4:cpu,memory:/docker/abc\n", t.path());
  EXPECT_EQ(m.limit, 256 * MiB);
  EXPECT_EQ(m.available, 200 * MiB);
  EXPECT_EQ(cgroup_memory_at("4:memory:/../../etc\n", t.path()).limit, 256 * MiB)
      << "a path that climbs is not followed";
}

TEST(CgroupMemory, UsagePastTheLimitLeavesNothing) {
  temp_dir t;
  v2_root(t.path());
  level(t.path(), std::to_string(100 * MiB), 150 * MiB, 0);
  const cgroup_memory m = cgroup_memory_at("0::/\n", t.path());
  EXPECT_EQ(m.limit, 100 * MiB);
  EXPECT_EQ(m.available, 0u);
}

TEST(CgroupMemory, ThisProcessIsReadWithoutFailing) {
  const cgroup_memory m = cgroup_memory_of_this_process();
  if (m.limit > 0) EXPECT_LE(m.available, m.limit);
}

}  // namespace
}  // namespace hc::test
