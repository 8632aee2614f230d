#pragma once
// The L3 work radix_cache hands to host_storage (backups and prefetch reads), by pointer:
// the sender reserved and protected every host id in a job until the reply. A job names
// host ids and keys only; which tree node it belongs to stays with the sender.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actors/common/clock.hpp"
#include "actors/common/ids.hpp"
#include "actors/host_storage/host_pools.hpp"
#include "storage/tier_io.hpp"

namespace hc {

/// A backup of one node's host copy to L3: its pages under keys[i], then its SSM state
/// (if any) under the last key.
struct l3_write_job {
  std::shared_ptr<host_pools> host;
  std::vector<std::string> keys;      ///< one per page
  std::vector<kv_index> page_starts;  ///< host id of each page's first token
  slot_id state_slot = no_slot;       ///< host slot of the node's state
  // out
  l3::write_report report;
  bool skipped = false;  ///< not written: the store was still reading its index (no failure)
  bool state_written = false;
  std::uint64_t bytes = 0;
  double seconds = 0;
};

/// A prefetch's I/O: existence with the trailing-page rule over keys, then the reads of
/// the usable pages into page_starts and — only if every one arrived — the state of the
/// last usable page into state_slot.
struct l3_read_job {
  std::shared_ptr<host_pools> host;
  std::vector<std::string> keys;
  std::vector<kv_index> page_starts;
  slot_id state_slot = no_slot;
  clock_ns deadline{};  ///< on the node's clock: reads stop once it passed
  // out
  std::size_t usable_pages = 0;
  l3::read_report report;
  std::uint64_t bytes = 0;
  double seconds = 0;
};

using l3_write_ptr = std::shared_ptr<l3_write_job>;
using l3_read_ptr = std::shared_ptr<l3_read_job>;

}  // namespace hc
