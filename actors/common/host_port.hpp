#pragma once
// A TCP address as the node's options and the client take it: "HOST:PORT", or
// "[IPV6]:PORT". Read here once so that every reader refuses the same mistakes, saying
// why, before a library reads them as something else: getaddrinfo took port 99999 and
// connected to 34463, kj listened on a random port for a bare "localhost".
//
// Thread safety: a pure function.

#include <cstdint>
#include <string>
#include <string_view>

#include "actors/common/status.hpp"

namespace hc {

struct host_port {
  std::string host;  ///< a name or an IPv4 address; an IPv6 address without its brackets
  std::uint16_t port = 0;
  bool ipv6 = false;  ///< the host was an [IPv6] address
};

/// The parts of `address`. PORT: a decimal number 0-65535 (whether 0 is allowed is the
/// caller's). HOST: a host name, an IPv4 address, or an IPv6 address in brackets.
/// Refused with invalid_argument, the message saying why (without the address, which the
/// caller names): no ':' ("not host:port"), an empty host ("no host"), any other port
/// ("the port must be a number from 0 to 65535"), a host of digits and dots that is no
/// IPv4 address ("'999.1.1.1' is not an IPv4 address"), an IPv6 address without brackets,
/// or a bracketed host of other characters than an IPv6 address's (hex digits, ':', '.';
/// whether they make one, the resolver says).
result<host_port> parse_host_port(std::string_view address);

}  // namespace hc
