#include "actors/forward_stream/tier_copier.hpp"

#include <vector>

namespace hc {
namespace {

bool ids_in_range(const l1_pool& dev, const host_pools& host, const tier_copy& c) {
  if (c.device_kv.size() != c.host_kv.size()) return false;
  const std::size_t tb = dev.token_bytes();
  if (tb != 0 && host.kv_bytes_per_token() != tb) return false;
  for (std::size_t i = 0; i < c.device_kv.size(); ++i) {
    if (c.device_kv[i] < 0 || c.host_kv[i] < 0) return false;
    if (tb != 0 && static_cast<std::size_t>(c.device_kv[i]) >= dev.kv_tokens()) return false;
    if (static_cast<std::size_t>(c.host_kv[i]) >= host.kv_tokens()) return false;
  }
  if (c.device_slot == no_slot || c.host_slot == no_slot) return true;
  if (c.host_slot <= 0 || static_cast<std::size_t>(c.host_slot) > host.slots()) return false;
  if (dev.slot_bytes() == 0) return true;
  return c.device_slot > 0 && static_cast<std::size_t>(c.device_slot) < dev.slots() &&
         host.state_bytes() == dev.slot_bytes();
}

}  // namespace

std::uint64_t run_tier_copy(l1_pool& dev, host_pools& host, const tier_copy& c, bool queue_only) {
  if (!ids_in_range(dev, host, c)) return 0;
  const bool d2h = c.dir == tier_copy::direction::device_to_host;
  std::uint64_t moved = 0;
  const std::size_t tb = dev.token_bytes();
  if (tb != 0 && !c.device_kv.empty()) {
    std::vector<l1_pool::kv_run> runs;  // one per run of consecutive ids on both sides
    std::size_t i = 0;
    while (i < c.device_kv.size()) {
      std::size_t n = 1;
      while (i + n < c.device_kv.size() &&
             c.device_kv[i + n] == c.device_kv[i] + static_cast<kv_index>(n) &&
             c.host_kv[i + n] == c.host_kv[i] + static_cast<kv_index>(n))
        ++n;
      runs.push_back({c.device_kv[i], n, host.kv(c.host_kv[i], n)});
      i += n;
    }
    // All runs in one submission; a device pool queues them, and the slot's copy, on its
    // stream, and a copy that is not queue_only waits once at the end.
    const status s = d2h ? dev.queue_read_kv_runs(runs) : dev.queue_write_kv_runs(runs);
    if (!s) return 0;  // checked above; a pool refusing it moved nothing
    moved += c.device_kv.size() * tb;
  }
  if (c.device_slot != no_slot && c.host_slot != no_slot && dev.slot_bytes() != 0) {
    std::span<std::byte> h = host.state(c.host_slot);
    const status s =
        d2h ? dev.queue_read_slot(c.device_slot, h) : dev.queue_write_slot(c.device_slot, h);
    if (s) moved += dev.slot_bytes();
  }
  if (!queue_only && moved != 0 && !dev.synchronize()) return 0;
  return moved;
}

}  // namespace hc
