#pragma once
// The protocol version this build speaks (schema/hybridcache.capnp's PROTOCOL_VERSION),
// for what is not in schema/ and so does not see the generated types: `--version` lines.

#include <cstdint>

namespace hc::rpc {

/// The Cap'n Proto protocol version of this build's node and clients, e.g. 2.
std::uint32_t protocol_version() noexcept;

}  // namespace hc::rpc
