#include "monitoring/metrics_address.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace hc {
namespace {

bool digits_only(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

constexpr const char* no_ipv6 =
    "IPv6 addresses are not served (the HTTP server is built without IPv6)";

}  // namespace

status check_metrics_address(const std::string& address) {
  const auto refuse = [&](const std::string& why) {
    return status{errc::invalid_config,
                  "--metrics " + address + ": " + why +
                      " (give host:port, e.g. 127.0.0.1:9464, 0.0.0.0:9464 for every interface, "
                      "or off)"};
  };
  if (!address.empty() && address.front() == '[') return refuse(no_ipv6);
  const std::size_t colon = address.rfind(':');
  if (colon == std::string::npos) return refuse("not host:port");
  const std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  if (host.empty()) return refuse("no host");
  if (port.empty() || port.size() > 5 || !digits_only(port) || std::stoul(port) > 65535)
    return refuse("the port must be a number from 0 to 65535");
  if (host.find(':') != std::string::npos) return refuse(no_ipv6);
  std::string without_dots = host;
  std::erase(without_dots, '.');
  in_addr ip{};
  if (digits_only(without_dots) && ::inet_pton(AF_INET, host.c_str(), &ip) != 1)
    return refuse("'" + host + "' is not an IPv4 address");
  return {};
}

}  // namespace hc
