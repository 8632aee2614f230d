#include "actors/common/host_port.hpp"

#include <algorithm>
#include <cctype>

namespace hc {
namespace {

bool digits_only(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

error refused(std::string why) {
  return error{errc::invalid_argument, std::move(why)};
}

/// Dotted-quad IPv4, as inet_pton reads it: four decimal parts 0-255, no leading zeros.
/// (This folder is standard C++ only, so not inet_pton itself.)
bool ipv4_address(std::string_view s) {
  int parts = 0;
  while (true) {
    const std::size_t dot = s.find('.');
    const std::string_view part = s.substr(0, dot);
    if (part.empty() || part.size() > 3 || !digits_only(part) ||
        (part.size() > 1 && part.front() == '0') || std::stoi(std::string(part)) > 255)
      return false;
    ++parts;
    if (dot == std::string_view::npos) break;
    s.remove_prefix(dot + 1);
  }
  return parts == 4;
}

/// The characters of an IPv6 address (hex digits, ':', and the dots of an embedded IPv4
/// one), with at least one ':'. Whether they make one is the resolver's to say.
bool ipv6_characters(std::string_view s) {
  return s.find(':') != std::string_view::npos && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == ':' || c == '.';
         });
}

}  // namespace

result<host_port> parse_host_port(std::string_view address) {
  host_port out;
  std::string_view host, port;
  if (!address.empty() && address.front() == '[') {
    const std::size_t close = address.find(']');
    if (close == std::string_view::npos || close + 1 >= address.size() || address[close + 1] != ':')
      return refused("not [IPv6 address]:port");
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
    out.ipv6 = true;
  } else {
    const std::size_t colon = address.rfind(':');
    if (colon == std::string_view::npos) return refused("not host:port");
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
  }
  if (host.empty()) return refused("no host");
  const unsigned long number =  // at most 5 digits: stoul cannot throw
      port.empty() || port.size() > 5 || !digits_only(port) ? 65536 : std::stoul(std::string(port));
  if (number > 65535) return refused("the port must be a number from 0 to 65535");
  out.host = std::string(host);
  out.port = static_cast<std::uint16_t>(number);
  if (out.ipv6) {
    if (!ipv6_characters(out.host)) return refused("'" + out.host + "' is not an IPv6 address");
    return out;
  }
  if (host.find(':') != std::string_view::npos)
    return refused("an IPv6 address goes in brackets: [" + out.host + "]:port");
  std::string without_dots = out.host;
  std::erase(without_dots, '.');
  if (digits_only(without_dots) && !ipv4_address(out.host))
    return refused("'" + out.host + "' is not an IPv4 address");
  return out;
}

}  // namespace hc
