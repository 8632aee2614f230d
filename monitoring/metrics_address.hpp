#pragma once
// The --metrics address ("host:port"), checked before the HTTP server (civetweb, through
// prometheus-cpp) reads it. civetweb takes more than that and reads some of it as
// something else — a bare port serves on every interface, the host "999.1.1.1" became
// 231.1.1.1 — and says of the rest only "null context when constructing CivetServer".
//
// Thread safety: a pure function.

#include <string>

#include "actors/common/status.hpp"

namespace hc {

/// Accepted: HOST:PORT, PORT a decimal number 0-65535 (0 = any free port), HOST an IPv4
/// address (0.0.0.0 = every interface) or a host name (localhost; civetweb resolves it).
/// Refused with invalid_config saying why: no host or no port, a port that is not such a
/// number, a host of digits and dots that is no IPv4 address, an IPv6 address (Debian's
/// civetweb is built without IPv6).
status check_metrics_address(const std::string& address);

/// Why a checked address could not be served on, found by trying what the HTTP server
/// does (resolve the host, bind a TCP socket to it) — civetweb says only "null context
/// when constructing CivetServer": "host 'x' not found (...)", the bind's error
/// ("Address already in use", "Cannot assign requested address"), or "" when both work
/// now. Only for the message after a failure: it binds nothing it keeps.
std::string why_metrics_address_failed(const std::string& address);

}  // namespace hc
