#include "actors/node/host_memory.hpp"

#include <algorithm>
#include <fstream>
#include <string>

namespace hc {

std::uint64_t memory_for_pools(std::uint64_t available, std::uint64_t total) noexcept {
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
  return memory_for_pools(available, total);
}

}  // namespace hc
