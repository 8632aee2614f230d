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
// A value that cannot be read (no /proc) is left out of the scrape, not reported as 0.
// Internal to monitoring/ (it includes prometheus-cpp).

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <vector>

namespace hc {

class process_metrics final : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace hc
