#include "schema/protocol_version.hpp"

#include "actors/common/version.hpp"
#include "hybridcache.capnp.h"

namespace hc::rpc {

std::uint32_t protocol_version() noexcept {
  return wire::PROTOCOL_VERSION;
}

std::string version_line(std::string_view tool) {
  return std::string(tool) + " " + std::string(version()) + " (protocol " +
         std::to_string(protocol_version()) + ")";
}

}  // namespace hc::rpc
