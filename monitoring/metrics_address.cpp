#include "monitoring/metrics_address.hpp"

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

}  // namespace hc
