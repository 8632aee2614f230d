#pragma once
// The protocol version this build speaks (schema/hybridcache.capnp's PROTOCOL_VERSION),
// for what is not in schema/ and so does not see the generated types, and the tools'
// `--version` line built from it.

#include <cstdint>
#include <string>
#include <string_view>

namespace hc::rpc {

/// The Cap'n Proto protocol version of this build's node and clients, e.g. 2.
std::uint32_t protocol_version() noexcept;

/// What `tool --version` prints: "hcctl 0.1.0 (protocol 2)" — the release
/// (actors/common/version.hpp) and the protocol, as a node answers them to a ping.
std::string version_line(std::string_view tool);

}  // namespace hc::rpc
