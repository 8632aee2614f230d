#include "monitoring/metrics_address.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "actors/common/host_port.hpp"

namespace hc {

status check_metrics_address(const std::string& address) {
  const auto refuse = [&](const std::string& why) {
    return status{errc::invalid_config,
                  "--metrics " + address + ": " + why +
                      " (give host:port, e.g. 127.0.0.1:9464, 0.0.0.0:9464 for every interface, "
                      "or off)"};
  };
  constexpr const char* no_ipv6 =
      "IPv6 addresses are not served (the HTTP server is built without IPv6)";
  // Before the parts are read: "::1:9464" is an IPv6 address to the reader, not a host.
  if (!address.empty() && address.front() == '[') return refuse(no_ipv6);
  if (const auto colon = address.rfind(':');
      colon != std::string::npos && address.substr(0, colon).find(':') != std::string::npos)
    return refuse(no_ipv6);
  if (auto parts = parse_host_port(address); !parts) return refuse(parts.err().message);
  return {};
}

std::string why_metrics_address_failed(const std::string& address) {
  auto parts = parse_host_port(address);
  if (!parts) return parts.err().message;
  addrinfo hints{};
  hints.ai_family = AF_INET;  // as civetweb without IPv6 resolves it
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(parts->port);
  if (const int rc = ::getaddrinfo(parts->host.c_str(), port.c_str(), &hints, &found); rc != 0)
    return "host '" + parts->host + "' not found (" + ::gai_strerror(rc) + ")";
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, ::freeaddrinfo);
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::string("socket: ") + std::strerror(errno);
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);  // as civetweb binds
  const bool bound = ::bind(fd, found->ai_addr, found->ai_addrlen) == 0;
  const int err = errno;
  ::close(fd);
  if (bound) return "";
  return std::strerror(err) + std::string(err == EADDRINUSE ? " (another process listens there?)"
                                          : err == EADDRNOTAVAIL
                                              ? " (no interface of this machine has that address)"
                                          : err == EACCES ? " (a port below 1024 needs privileges)"
                                                          : "");
}

}  // namespace hc
