#pragma once
// The memory limit a process's cgroups put on it, which /proc/meminfo and sysconf do not
// show: in a container (a Kubernetes pod's limits.memory, docker run --memory) the machine
// may have hundreds of GiB available while the container may take a few, and what it takes
// past its limit — the L1 pools' pages in /dev/shm among it, charged to the process that
// first touches them — ends in the kernel's OOM killer, not in a failed allocation.
//
// Reads cgroup v2 (memory.max, memory.current) and v1 (memory.limit_in_bytes,
// memory.usage_in_bytes): from the process's own cgroup up to the hierarchy's root, every
// level's limit applies. Thread safety: plain functions over the filesystem.

#include <cstdint>
#include <filesystem>
#include <string_view>

namespace hc {

struct cgroup_memory {
  /// The tightest limit, in bytes; 0 = none (or none could be read).
  std::uint64_t limit = 0;
  /// What may still be taken under every limit: at each level, its limit less what the
  /// cgroup uses (its working set: usage less the inactive file pages the kernel reclaims
  /// first, as the kubelet counts it); the least of them. Meaningful when limit > 0.
  std::uint64_t available = 0;
};

/// This process's: /proc/self/cgroup resolved under /sys/fs/cgroup.
cgroup_memory cgroup_memory_of_this_process();

/// The same from `proc_self_cgroup` (the text of /proc/self/cgroup) under `root` (where the
/// hierarchies are mounted: v2 at root itself or at root/unified, v1's memory controller at
/// root/memory). A cgroup path that is not there (a container whose mount shows only its
/// own subtree) counts from the mount's root, which is then the process's cgroup.
cgroup_memory cgroup_memory_at(std::string_view proc_self_cgroup,
                               const std::filesystem::path& root);

}  // namespace hc
