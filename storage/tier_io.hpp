#pragma once
// The L3 side of backups and prefetches (spec §5.4), as plain functions over an l3_store;
// the host_storage actor runs them on its I/O thread. Pages move in batches (128 pages by
// default); a backup stops at the first failed batch and reports it, a read stops at the
// first page it cannot get (a later page without its predecessors is useless), and the
// SSM state is read only when every page arrived. Each call is independent: a failure
// reported by one never stops the next (the upstream bug where one failed batch silently
// ended all later backups cannot happen here).

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "actors/common/clock.hpp"
#include "actors/common/status.hpp"
#include "storage/l3_store.hpp"

namespace hc::l3 {

inline constexpr std::size_t default_batch_pages = 128;

struct write_report {
  std::size_t pages_written = 0;  ///< pages of the batches that succeeded
  bool failed = false;
  std::size_t failed_batch = 0;  ///< index of the first failed batch (if failed)
  error err;                     ///< why it failed
};

/// Writes pages[i] under keys[i] (pool kv_page), batch by batch.
write_report write_pages(l3_store& store, std::span<const std::string> keys,
                         std::span<const std::span<const std::byte>> pages,
                         std::size_t batch_pages = default_batch_pages);

/// Pages usable from the start of `keys` (node page keys in order): the longest present
/// prefix cut back to the deepest page that has an SSM state under its key
/// (TRAILING_PAGES(1), integration.md §1.4).
std::size_t usable_prefix_pages(l3_store& store, std::span<const std::string> keys);

struct read_report {
  std::size_t pages_read = 0;  ///< leading pages that arrived intact
  bool state_read = false;     ///< the SSM state of the last page arrived
  bool timed_out = false;      ///< the deadline passed first
  error err;                   ///< the first failure, if any
};

/// Reads keys[i] into dst[i] (each value must have exactly dst[i].size() bytes) until the
/// first failure or the deadline, then — only if every page arrived — the SSM state under
/// the last key into `state` (skipped if state is empty). The deadline is on `time` and
/// checked before each batch of pages and before the state.
read_report read_pages(l3_store& store, std::span<const std::string> keys,
                       std::span<const std::span<std::byte>> dst, std::span<std::byte> state,
                       const clock& time, clock_ns deadline,
                       std::size_t batch_pages = default_batch_pages);

}  // namespace hc::l3
