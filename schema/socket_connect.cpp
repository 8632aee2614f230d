#include "schema/socket_connect.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>

#include "actors/common/host_port.hpp"
#include "schema/client.hpp"  // interrupt_check_interval

namespace hc::wire_convert {
namespace {

using steady = std::chrono::steady_clock;

/// Milliseconds left until `due` for poll(): -1 without a deadline, 0 once it passed.
int poll_ms(std::optional<steady::time_point> due) {
  if (!due) return -1;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(*due - steady::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

error system_error(const std::string& what, int err) {
  return {errc::io_error, what + ": " + std::strerror(err)};
}

/// What a connect refused by the socket's (or its directory's) permissions says besides.
constexpr const char* unix_access_hint =
    " (this user may not use the node's socket or its directory: run as the node's user, or "
    "as a user of its group with the node started with --group-access)";

/// Closes the descriptor unless released.
struct fd_guard {
  int fd;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

/// What a connect waits for and may be stopped by.
struct connect_limits {
  std::optional<steady::time_point> due;
  std::chrono::milliseconds deadline;
  const std::function<bool()>& interrupted;
};

/// Connects the non-blocking socket `fd` to `sa`, waiting for the connect to finish.
/// `access_hint`: added to a refusal for permissions (EACCES).
status connect_until(int fd, const sockaddr* sa, socklen_t len, const connect_limits& limits,
                     const std::string& what, const char* access_hint = "") {
  const auto late = [&] {
    return status{errc::timeout, "could not connect to " + what + " within " +
                                     std::to_string(limits.deadline.count()) + " ms"};
  };
  const auto stopped = [&] {
    return status{errc::interrupted, "the caller was interrupted while it connected to " + what};
  };
  auto next_ask = steady::now() + interrupt_check_interval;
  const auto ask = [&] {  // the interrupt check, once a slice
    if (!limits.interrupted || steady::now() < next_ask) return false;
    next_ask = steady::now() + interrupt_check_interval;
    return limits.interrupted();
  };
  for (;;) {
    if (::connect(fd, sa, len) == 0) return {};
    if (errno == EINPROGRESS || errno == EINTR) break;  // finishing in the background
    if (errno == EACCES)
      return status{errc::io_error,
                    system_error("connect to " + what, errno).message + access_hint};
    // A Unix socket whose listener's backlog is full: the kernel says try again.
    if (errno != EAGAIN) return system_error("connect to " + what, errno);
    if (limits.due && steady::now() >= *limits.due) return late();
    if (ask()) return stopped();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  pollfd p{fd, POLLOUT, 0};
  for (;;) {
    int wait = poll_ms(limits.due);
    if (limits.interrupted && (wait < 0 || wait > interrupt_check_interval.count()))
      wait = static_cast<int>(interrupt_check_interval.count());
    const int n = ::poll(&p, 1, wait);
    if (n > 0) break;
    if (n == 0) {
      if (limits.due && steady::now() >= *limits.due) return late();
      if (limits.interrupted && limits.interrupted()) return stopped();
      continue;
    }
    if (errno != EINTR) return system_error("connect to " + what, errno);
  }
  int err = 0;
  socklen_t err_len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) != 0) err = errno;
  if (err != 0) return system_error("connect to " + what, err);
  return {};
}

result<int> connect_unix(const std::string& path, const connect_limits& limits) {
  const std::string what = "unix:" + path;
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof sa.sun_path)
    return error{errc::invalid_argument, what + ": a Unix socket path must have 1 to " +
                                             std::to_string(sizeof sa.sun_path - 1) +
                                             " bytes, this one has " + std::to_string(path.size())};
  std::memcpy(sa.sun_path, path.data(), path.size());
  fd_guard fd{::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
  if (fd.fd < 0) return system_error("socket for " + what, errno);
  if (status s = connect_until(fd.fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa, limits,
                               what, unix_access_hint);
      !s)
    return s.err();
  return fd.release();
}

result<int> connect_tcp(const std::string& address, const connect_limits& limits) {
  auto parts = parse_host_port(address);
  if (!parts)
    return error{errc::invalid_argument,
                 "address \"" + address + "\": " + parts.err().message +
                     " (expected unix:PATH or HOST:PORT, an IPv6 host in brackets)"};
  if (parts->port == 0)
    return error{errc::invalid_argument,
                 "address \"" + address + "\": the port must be 1 to 65535, not 0"};
  const std::string host = parts->host, port = std::to_string(parts->port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0)
    return error{errc::io_error, "resolve " + address + ": " + ::gai_strerror(rc)};
  error last{errc::io_error, "resolve " + address + ": no address"};
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    fd_guard fd{
        ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol)};
    if (fd.fd < 0) {
      last = system_error("socket for " + address, errno);
      continue;
    }
    if (status s = connect_until(fd.fd, a->ai_addr, a->ai_addrlen, limits, address); !s) {
      last = s.err();
      if (last.code == errc::timeout || last.code == errc::interrupted) break;
      continue;
    }
    const int one = 1;
    (void)::setsockopt(fd.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::freeaddrinfo(found);
    return fd.release();
  }
  ::freeaddrinfo(found);
  return last;
}

}  // namespace

result<int> connect_stream_socket(const std::string& address, std::chrono::milliseconds deadline,
                                  const std::function<bool()>& interrupted) {
  connect_limits limits{std::nullopt, deadline, interrupted};
  if (deadline.count() > 0) limits.due = steady::now() + deadline;
  if (address.rfind("unix:", 0) == 0) return connect_unix(address.substr(5), limits);
  return connect_tcp(address, limits);
}

}  // namespace hc::wire_convert
