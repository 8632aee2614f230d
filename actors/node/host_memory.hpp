#pragma once
// How much host memory a new instance's pools may take (the scheduler's check at open).
// The pools are committed when an instance opens — the L1 pools' pages in /dev/shm (a
// tmpfs: memory, not disk) and the L2 pools' populated mappings — so a node that takes
// the last of the machine's memory for them is what the OOM killer then picks (seen: a
// 24 GiB VM, instances opened until /dev/shm held 23 GiB, the node killed mid-open).

#include <cstdint>

#include "actors/node/cgroup_memory.hpp"

namespace hc {

/// Bytes a new instance's pools may take: `limit` when it is not 0 (a budget the node was
/// configured with), else MemAvailable less a reserve for the rest of the machine — 1/32
/// of MemTotal, at most 4 GiB — where the node's cgroups (a container's memory limit)
/// leave less than the machine: what they still allow, less 1/32 of their limit. 0 when
/// nothing is known (no check).
std::uint64_t memory_for_pools(std::uint64_t limit);

/// The memory this node may use at most: the machine's, or its cgroups' limit when lower
/// (a container's). 0 when unknown.
std::uint64_t memory_this_node_may_use();

/// The rule of memory_for_pools for given MemAvailable and MemTotal (bytes) and the node's
/// cgroup memory (none: limit 0).
std::uint64_t memory_for_pools(std::uint64_t available, std::uint64_t total,
                               const cgroup_memory& cg = {}) noexcept;

}  // namespace hc
