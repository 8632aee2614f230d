#include "storage/tier_io.hpp"

#include "storage/hit_policy.hpp"

namespace hc::l3 {

write_report write_pages(l3_store& store, std::span<const std::string> keys,
                         std::span<const std::span<const std::byte>> pages,
                         std::size_t batch_pages) {
  write_report r;
  if (batch_pages == 0) batch_pages = default_batch_pages;
  for (std::size_t start = 0; start < keys.size(); start += batch_pages) {
    const std::size_t end = std::min(keys.size(), start + batch_pages);
    for (std::size_t i = start; i < end; ++i) {
      status s = store.set(l3_pool::kv_page, keys[i], pages[i]);
      if (!s) {
        r.failed = true;
        r.failed_batch = start / batch_pages;
        r.err = s.err();
        return r;
      }
    }
    r.pages_written = end;
  }
  return r;
}

std::size_t usable_prefix_pages(l3_store& store, std::span<const std::string> keys) {
  const std::vector<bool> kv = store.exists_many(l3_pool::kv_page, keys);
  const std::size_t lead = leading_pages(kv);
  pool_presence state{hit_policy::trailing_pages, 1, {}};
  state.present = store.exists_many(l3_pool::ssm_state, keys.first(lead));
  return usable_pages(kv, std::span<const pool_presence>(&state, 1));
}

read_report read_pages(l3_store& store, std::span<const std::string> keys,
                       std::span<const std::span<std::byte>> dst, std::span<std::byte> state,
                       const clock& time, clock_ns deadline, std::size_t batch_pages) {
  read_report r;
  if (batch_pages == 0) batch_pages = default_batch_pages;
  for (std::size_t start = 0; start < keys.size(); start += batch_pages) {
    if (time.now() >= deadline) {
      r.timed_out = true;
      return r;
    }
    const std::size_t end = std::min(keys.size(), start + batch_pages);
    for (std::size_t i = start; i < end; ++i) {
      // Straight into the host pool's page (no staging copy).
      status s = store.get_into(l3_pool::kv_page, keys[i], dst[i]);
      if (!s) {
        r.err = s.err();
        return r;
      }
      r.pages_read = i + 1;
    }
  }
  if (state.empty() || keys.empty()) return r;
  if (time.now() >= deadline) {
    r.timed_out = true;
    return r;
  }
  status s = store.get_into(l3_pool::ssm_state, keys.back(), state);
  if (!s) {
    r.err = s.err();
    return r;
  }
  r.state_read = true;
  return r;
}

}  // namespace hc::l3
