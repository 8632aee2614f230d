// probe_devices_in_child (gpu/device_probe.hpp): the probe runs in a forked child that
// writes its result into a pipe — the device count, then the reason — and exits.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gpu/device_probe.hpp"

namespace hc::gpu {
namespace {

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

}  // namespace

device_probe_result probe_devices_in_child() {
  device_probe_result r;
  r.built_with_cuda = HC_HAVE_CUDA != 0;
  int fds[2];
  if (::pipe(fds) != 0) {
    r.reason = std::string("probing in a child: pipe: ") + std::strerror(errno);
    return r;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    r.reason = std::string("probing in a child: fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return r;
  }
  if (pid == 0) {
    ::close(fds[0]);
    const device_probe_result c = probe_devices();
    const std::string out = std::to_string(c.device_count) + "\n" + c.reason;
    write_all(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string in;
  char buf[512];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    in.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  const std::size_t nl = in.find('\n');
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || nl == std::string::npos) {
    r.reason = "probing in a child: the child died before it answered";
    return r;
  }
  r.device_count = std::atoi(in.substr(0, nl).c_str());
  r.reason = in.substr(nl + 1);
  return r;
}

}  // namespace hc::gpu
