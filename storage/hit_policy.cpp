#include "storage/hit_policy.hpp"

namespace hc {
namespace {

bool has(const std::vector<bool>& v, std::size_t i) {
  return i < v.size() && v[i];
}

bool allows(const pool_presence& p, std::size_t len, std::size_t first_missing) {
  if (p.policy == hit_policy::all_pages) return len <= first_missing;
  const std::size_t n = p.trailing_n == 0 ? 1 : p.trailing_n;
  if (len < n) return false;
  for (std::size_t i = len - n; i < len; ++i)
    if (!has(p.present, i)) return false;
  return true;
}

}  // namespace

std::size_t leading_pages(const std::vector<bool>& present) {
  std::size_t n = 0;
  while (has(present, n))
    ++n;
  return n;
}

std::vector<std::size_t> restorable_prefix_pages(const std::vector<bool>& kv_present,
                                                 std::span<const pool_presence> pools) {
  const std::size_t kv_pages = leading_pages(kv_present);
  std::vector<std::size_t> firsts;
  firsts.reserve(pools.size());
  for (const pool_presence& p : pools)
    firsts.push_back(leading_pages(p.present));
  std::vector<std::size_t> out;
  for (std::size_t len = 1; len <= kv_pages; ++len) {
    bool ok = true;
    for (std::size_t i = 0; i < pools.size() && ok; ++i)
      ok = allows(pools[i], len, firsts[i]);
    if (ok) out.push_back(len);
  }
  return out;
}

std::size_t usable_pages(const std::vector<bool>& kv_present,
                         std::span<const pool_presence> pools) {
  const auto all = restorable_prefix_pages(kv_present, pools);
  return all.empty() ? 0 : all.back();
}

}  // namespace hc
