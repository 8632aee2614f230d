#include "actors/daemon/l3_start.hpp"

#include <fmt/format.h>

#include <chrono>
#include <string>

#include "actors/common/log.hpp"
#include "storage/loading_store.hpp"

namespace hc {
namespace {

using steady = std::chrono::steady_clock;

double seconds_since(steady::time_point t0) {
  return std::chrono::duration<double>(steady::now() - t0).count();
}

/// Counts and logs a corruption that made the store start empty.
void report_quarantine(const std::string& what, prometheus_metrics& metrics) {
  log::warn("the L3 store's index was corrupt: " + what);
  metrics.fault("l3_corrupt_store");
}

/// rocksdb_store::load with the log lines around it; `stop` may be null.
result<std::shared_ptr<l3_store>> load_logged(std::unique_ptr<rocksdb_store> st,
                                              const std::string& path,
                                              const std::atomic<bool>* stop,
                                              prometheus_metrics& metrics) {
  const auto t0 = steady::now();
  const std::string before = st->quarantined();
  rocksdb_load_options lo;
  lo.stop = stop;
  auto last = t0;
  lo.progress = [&last, t0](std::uint64_t records, std::uint64_t estimate) {
    if (seconds_since(last) < 5.0) return;
    last = steady::now();
    log::info(fmt::format("L3 store: {} index records read{} in {:.0f} s", records,
                          estimate > records ? fmt::format(" of about {}", estimate) : "",
                          seconds_since(t0)));
  };
  auto loaded = rocksdb_store::load(std::move(st), lo);
  if (!loaded) return loaded.err();
  if ((*loaded)->quarantined() != before) report_quarantine((*loaded)->quarantined(), metrics);
  const l3_usage u = (*loaded)->usage();
  log::info(fmt::format("L3 store {} ready: {} values, {} of {} bytes (index read in {:.1f} s)",
                        path, u.values, u.bytes, u.capacity, seconds_since(t0)));
  return std::shared_ptr<l3_store>(std::move(*loaded));
}

}  // namespace

result<std::shared_ptr<l3_store>> start_l3_store(std::unique_ptr<rocksdb_store> unloaded,
                                                 const rocksdb_store_config& cfg,
                                                 std::uint64_t background_above,
                                                 prometheus_metrics& metrics) {
  if (!unloaded->quarantined().empty()) report_quarantine(unloaded->quarantined(), metrics);
  const std::uint64_t estimate = unloaded->index_records_estimate();
  if (estimate <= background_above && background_above > 0)
    return load_logged(std::move(unloaded), cfg.path, nullptr, metrics);
  log::info(fmt::format(
      "L3 store {}: reading its index of about {} records while the node serves; the tier "
      "misses until 'L3 store ready' (--l3-background-load-above {})",
      cfg.path, estimate, background_above));
  metrics.l3_loading(true);
  // std::function needs a copyable callable: the store travels in a shared holder.
  auto holder = std::make_shared<std::unique_ptr<rocksdb_store>>(std::move(unloaded));
  auto open = [holder, path = cfg.path,
               &metrics](const std::atomic<bool>& stop) -> result<std::shared_ptr<l3_store>> {
    auto loaded = load_logged(std::move(*holder), path, &stop, metrics);
    metrics.l3_loading(false);
    if (loaded) return loaded;
    if (stop.load()) {
      log::info("L3 store: stopped reading its index (the node is stopping)");
    } else {
      log::error("the L3 store " + path + " cannot be read: " + loaded.err().message +
                 "; the node goes on without its L3 tier");
      metrics.fault("l3_read_error");
    }
    return loaded;
  };
  return std::shared_ptr<l3_store>(
      std::make_shared<loading_store>(cfg.capacity_bytes, std::move(open)));
}

}  // namespace hc
