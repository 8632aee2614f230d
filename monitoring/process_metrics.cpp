#include "monitoring/process_metrics.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
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

/// The fields of /proc/self/stat (read through `fd`, from its start) after the command
/// name — field 3, the state, first — or empty. The name is in parentheses and may hold
/// spaces and ')': it ends at the last ')'.
std::vector<std::string> stat_fields(int fd) {
  if (fd < 0) return {};
  std::array<char, 4096> buf{};
  ssize_t n;
  do {
    n = ::pread(fd, buf.data(), buf.size() - 1, 0);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return {};
  const std::string line(buf.data(), static_cast<std::size_t>(n));
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

/// The boot time, seconds since the epoch (/proc/stat's btime), or -1.
double boot_time() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      double t = -1;
      in >> t;
      return t;
    }
    in.ignore(1 << 20, '\n');
  }
  return -1;
}

}  // namespace

process_metrics::process_metrics()
    : stat_fd_(::open("/proc/self/stat", O_RDONLY | O_CLOEXEC)),
      fd_dir_(::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC)),
      boot_time_(boot_time()) {}

process_metrics::~process_metrics() {
  if (stat_fd_ >= 0) ::close(stat_fd_);
  if (fd_dir_ >= 0) ::close(fd_dir_);
}

std::optional<double> process_metrics::open_fds() const {
  if (fd_dir_ < 0) return std::nullopt;
  std::lock_guard lk(fd_dir_mu_);
  if (::lseek(fd_dir_, 0, SEEK_SET) != 0) return std::nullopt;
  alignas(8) std::array<char, 16384> buf;  // linux_dirent64 records
  double entries = 0;
  for (;;) {
    const long n = ::syscall(SYS_getdents64, fd_dir_, buf.data(), buf.size());
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    for (long at = 0; at < n;) {
      // struct linux_dirent64 { u64 d_ino; s64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
      unsigned short reclen = 0;
      std::memcpy(&reclen, buf.data() + at + 16, sizeof reclen);
      const char* name = buf.data() + at + 19;
      if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0) ++entries;
      if (reclen == 0) return std::nullopt;
      at += reclen;
    }
  }
  // The listing's own descriptor counts: it stays open for the process's life, like any other.
  return entries;
}

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
  const std::vector<std::string> stat = stat_fields(stat_fd_);
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
  if (auto started = stat_field(stat, 22); started && boot_time_ >= 0 && ticks > 0)
    out.push_back(family("process_start_time_seconds",
                         "Start time of the process since unix epoch in seconds",
                         pm::MetricType::Gauge, boot_time_ + *started / ticks));
  if (auto fds = open_fds())
    out.push_back(
        family("process_open_fds", "Number of open file descriptors", pm::MetricType::Gauge, *fds));
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
    out.push_back(family("process_max_fds", "Maximum number of open file descriptors",
                         pm::MetricType::Gauge, static_cast<double>(nofile.rlim_cur)));
  return out;
}

}  // namespace hc
