#include "monitoring/process_metrics.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace hc {
namespace {

namespace pm = prometheus;

/// One family of one unlabelled series.
pm::MetricFamily family(const char* name, const char* help, pm::MetricType type, double value) {
  pm::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  pm::ClientMetric m;
  if (type == pm::MetricType::Counter)
    m.counter.value = value;
  else
    m.gauge.value = value;
  f.metric.push_back(m);
  return f;
}

/// The fields of /proc/self/stat after the command name (field 3, the state, first), or
/// empty. The name is in parentheses and may hold spaces and ')': it ends at the last ')'.
std::vector<std::string> stat_fields() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return {};
  const auto close = line.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;)
    fields.push_back(f);
  return fields;
}

/// /proc/self/stat field `n` (1-based, as proc(5) numbers them; n >= 3) as a number.
std::optional<double> stat_field(const std::vector<std::string>& fields, std::size_t n) {
  if (n < 3 || n - 3 >= fields.size()) return std::nullopt;
  try {
    return std::stod(fields[n - 3]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// The boot time, seconds since the epoch (/proc/stat's btime).
std::optional<double> boot_time() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      double t = 0;
      if (in >> t) return t;
      return std::nullopt;
    }
    in.ignore(1 << 20, '\n');
  }
  return std::nullopt;
}

}  // namespace

std::vector<pm::MetricFamily> process_metrics::Collect() const {
  std::vector<pm::MetricFamily> out;
  rusage ru{};
  if (::getrusage(RUSAGE_SELF, &ru) == 0) {
    const auto seconds = [](const timeval& t) {
      return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
    };
    out.push_back(family("process_cpu_seconds_total",
                         "Total user and system CPU time spent in seconds", pm::MetricType::Counter,
                         seconds(ru.ru_utime) + seconds(ru.ru_stime)));
  }
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const std::vector<std::string> stat = stat_fields();
  // proc(5): 20 num_threads, 22 starttime (clock ticks after boot), 23 vsize (bytes),
  // 24 rss (pages).
  if (auto v = stat_field(stat, 23))
    out.push_back(family("process_virtual_memory_bytes", "Virtual memory size in bytes",
                         pm::MetricType::Gauge, *v));
  if (auto v = stat_field(stat, 24))
    out.push_back(family("process_resident_memory_bytes", "Resident memory size in bytes",
                         pm::MetricType::Gauge, *v * page));
  if (auto v = stat_field(stat, 20))
    out.push_back(family("process_threads", "Number of OS threads in the process",
                         pm::MetricType::Gauge, *v));
  const auto started = stat_field(stat, 22);
  const auto boot = boot_time();
  if (started && boot && ticks > 0)
    out.push_back(family("process_start_time_seconds",
                         "Start time of the process since unix epoch in seconds",
                         pm::MetricType::Gauge, *boot + *started / ticks));
  std::error_code ec;
  std::size_t fds = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++fds;
  if (!ec && fds > 0)  // less the one the listing itself held open
    out.push_back(family("process_open_fds", "Number of open file descriptors",
                         pm::MetricType::Gauge, static_cast<double>(fds - 1)));
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
    out.push_back(family("process_max_fds", "Maximum number of open file descriptors",
                         pm::MetricType::Gauge, static_cast<double>(nofile.rlim_cur)));
  return out;
}

}  // namespace hc
