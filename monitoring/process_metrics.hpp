#pragma once
// The process's own series, read from /proc at each scrape, under the names every
// Prometheus client library exports (the client guidelines' "process metrics"), so that
// the dashboards and alerts operators already have for them work on the node as is:
//   process_cpu_seconds_total          counter  user + system CPU time
//   process_resident_memory_bytes      gauge    resident set size
//   process_virtual_memory_bytes       gauge    virtual memory size
//   process_open_fds                   gauge    open file descriptors
//   process_max_fds                    gauge    their limit (RLIMIT_NOFILE, soft)
//   process_start_time_seconds         gauge    start time, seconds since the epoch
//   process_threads                    gauge    threads
// /proc/self/stat and /proc/self/fd are opened once, when this is made, so that a scrape
// opens no file: one whose connection took the last free descriptor — when
// process_open_fds matters most — still reports them (used to leave them out). A value that cannot
// be read (no /proc) is left out, not reported as 0. Concurrent scrapes are fine (the descriptor
// listing is read under a lock). Internal to monitoring/ (it includes prometheus-cpp).

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <mutex>
#include <optional>
#include <vector>

namespace hc {

class process_metrics final : public prometheus::Collectable {
 public:
  process_metrics();
  ~process_metrics() override;
  process_metrics(const process_metrics&) = delete;
  process_metrics& operator=(const process_metrics&) = delete;

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  /// Entries of /proc/self/fd less the one this holds, or nullopt.
  std::optional<double> open_fds() const;

  int stat_fd_ = -1;              ///< /proc/self/stat
  int fd_dir_ = -1;               ///< /proc/self/fd
  double boot_time_ = -1;         ///< /proc/stat btime, seconds since the epoch; -1 unknown
  mutable std::mutex fd_dir_mu_;  ///< the listing's offset is the descriptor's
};

}  // namespace hc
