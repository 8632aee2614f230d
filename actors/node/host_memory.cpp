#include "actors/node/host_memory.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace hc {

std::uint64_t memory_for_pools(std::uint64_t available, std::uint64_t total,
                               const cgroup_memory& cg) noexcept {
  // A container's limit, which /proc/meminfo does not show: pools past it were committed
  // until the kernel's OOM killer took the node, mid-open.
  if (cg.limit > 0) {
    total = total == 0 ? cg.limit : std::min(total, cg.limit);
    available = available == 0 ? cg.available : std::min(available, cg.available);
    if (available == 0) return 1;  // nothing left under the limit: refuse every pool
  }
  if (available == 0) return 0;
  const std::uint64_t reserve = std::min<std::uint64_t>(total / 32, std::uint64_t{4} << 30);
  // Nothing left beyond the reserve still refuses every pool: 1 byte, not "unknown".
  return available > reserve ? available - reserve : 1;
}

std::uint64_t memory_for_pools(std::uint64_t limit) {
  if (limit != 0) return limit;
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::uint64_t kib = 0, available = 0, total = 0;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") available = kib * 1024;
    if (key == "MemTotal:") total = kib * 1024;
  }
  return memory_for_pools(available, total, cgroup_memory_of_this_process());
}

std::uint64_t memory_this_node_may_use() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  std::uint64_t bytes = pages > 0 && page > 0
                            ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)
                            : 0;
  if (const cgroup_memory cg = cgroup_memory_of_this_process(); cg.limit > 0)
    bytes = bytes == 0 ? cg.limit : std::min(bytes, cg.limit);
  return bytes;
}

}  // namespace hc
