#pragma once
// hybridcached's L3 start: the store's index read before the node serves when it is small,
// else on a thread of its own while the node serves (storage/loading_store.hpp: the tier
// misses meanwhile) — with what an operator needs to hear in the log: progress every few
// seconds, the store's size once it serves, a corruption moved aside (also a fault in the
// metrics), a read that failed.

#include <cstdint>
#include <memory>

#include "actors/common/status.hpp"
#include "monitoring/prometheus_metrics.hpp"
#include "storage/l3_store.hpp"
#include "storage/rocksdb_store.hpp"

namespace hc {

/// Reads the index of `unloaded` (from rocksdb_store::open_unloaded(cfg)): at once when
/// RocksDB estimates at most `background_above` records, and then its errors are returned
/// (the node should not start); otherwise in the background — the result serves at once,
/// and a read that fails leaves the node without its L3 tier (logged, a fault). `metrics`
/// must outlive the result.
result<std::shared_ptr<l3_store>> start_l3_store(std::unique_ptr<rocksdb_store> unloaded,
                                                 const rocksdb_store_config& cfg,
                                                 std::uint64_t background_above,
                                                 prometheus_metrics& metrics);

}  // namespace hc
