#include "actors/node/cgroup_memory.hpp"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace hc {
namespace {

namespace fs = std::filesystem;

/// One hierarchy's file names: v2 and v1 name the same things differently.
struct memory_files {
  const char* limit;
  const char* usage;
  const char* inactive_file;  ///< its key in memory.stat
};
constexpr memory_files v2_files{"memory.max", "memory.current", "inactive_file"};
constexpr memory_files v1_files{"memory.limit_in_bytes", "memory.usage_in_bytes",
                                "total_inactive_file"};

/// A byte count from a cgroup file; none for "max" (v2's no limit), v1's "no limit" (the
/// page counter's maximum, ~2^63) or a file that is not there.
std::optional<std::uint64_t> read_bytes(const fs::path& file) {
  std::ifstream in(file);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  try {
    std::size_t used = 0;
    const unsigned long long v = std::stoull(word, &used);
    if (used != word.size() || v >= (std::uint64_t{1} << 62)) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::uint64_t stat_value(const fs::path& file, const std::string& key) {
  std::ifstream in(file);
  std::string k;
  std::uint64_t v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return 0;
}

/// Every level's limit, from `mount` down to the cgroup `path` names under it. A path
/// that is not there (a mount of the process's own subtree, as a container without a
/// cgroup namespace has it) leaves the mount alone: it is the process's cgroup.
cgroup_memory walk(const fs::path& mount, const std::string& path, const memory_files& f) {
  std::vector<fs::path> levels{mount};
  std::istringstream parts(path);
  for (std::string c; std::getline(parts, c, '/');) {
    if (c.empty() || c == ".") continue;
    if (c == "..") return walk(mount, "", f);
    levels.push_back(levels.back() / c);
  }
  std::error_code ec;
  if (!fs::is_directory(levels.back(), ec)) levels.resize(1);
  cgroup_memory m;
  for (const fs::path& dir : levels) {
    const auto limit = read_bytes(dir / f.limit);
    if (!limit) continue;
    const std::uint64_t usage = read_bytes(dir / f.usage).value_or(0);
    const std::uint64_t inactive = stat_value(dir / "memory.stat", f.inactive_file);
    const std::uint64_t used = usage > inactive ? usage - inactive : 0;
    const std::uint64_t available = *limit > used ? *limit - used : 0;
    m.available = m.limit == 0 ? available : std::min(m.available, available);
    m.limit = m.limit == 0 ? *limit : std::min(m.limit, *limit);
  }
  return m;
}

}  // namespace

cgroup_memory cgroup_memory_at(std::string_view proc_self_cgroup, const fs::path& root) {
  std::optional<std::string> v1_path, v2_path;
  std::istringstream lines{std::string(proc_self_cgroup)};
  for (std::string line; std::getline(lines, line);) {
    const std::size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (id == "0" && controllers.empty()) v2_path = path;
    std::istringstream names(controllers);
    for (std::string c; std::getline(names, c, ',');)
      if (c == "memory") v1_path = path;
  }
  std::error_code ec;
  if (v1_path && fs::is_directory(root / "memory", ec))
    return walk(root / "memory", *v1_path, v1_files);
  if (v2_path)
    for (const fs::path& mount : {root, root / "unified"})
      if (fs::exists(mount / "cgroup.controllers", ec)) return walk(mount, *v2_path, v2_files);
  return {};
}

cgroup_memory cgroup_memory_of_this_process() {
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  return cgroup_memory_at(text.str(), "/sys/fs/cgroup");
}

}  // namespace hc
