#pragma once
// The host_storage actor (one per node, on its own thread: it blocks on L3 I/O): the L3
// side of backups and prefetches (architecture.md §1-§2). It moves bytes between the L2
// host pools of an instance and the node's L3 store; it decides nothing about ownership —
// the radix_cache that sent a job reserved and protected every id in it until the reply.
//
// Messages: (store, l3_write_ptr) -> l3_write_ptr, (prefetch, l3_read_ptr) -> l3_read_ptr,
// (extstore, store_ptr): an external client's batch, completed on this thread,
// (inspect) -> std::string JSON.

#include <caf/fwd.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "actors/common/clock.hpp"
#include "actors/common/ids.hpp"
#include "actors/common/metrics_sink.hpp"
#include "actors/host_storage/host_pools.hpp"
#include "actors/radix_cache/radix_node.hpp"
#include "storage/l3_store.hpp"
#include "storage/tier_io.hpp"

namespace hc {

/// A backup of one node's host copy to L3: its pages under keys[i], then its SSM state
/// (if any) under the last key.
struct l3_write_job {
  std::shared_ptr<host_pools> host;
  std::vector<std::string> keys;      ///< one per page
  std::vector<kv_index> page_starts;  ///< host id of each page's first token
  slot_id state_slot = no_slot;       ///< host slot of the node's state
  node_ref node;                      ///< for the sender: what to release afterwards
  // out
  l3::write_report report;
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

/// `store` may be null (no L3): jobs then fail with io_error. `time` (outlives the actor)
/// times the I/O and checks read deadlines. Spawn it detached.
caf::behavior host_storage_actor(caf::event_based_actor* self, std::shared_ptr<l3_store> store,
                                 metrics_sink* metrics, const clock* time);

}  // namespace hc
