#include "schema/protocol_version.hpp"

#include "hybridcache.capnp.h"

namespace hc::rpc {

std::uint32_t protocol_version() noexcept {
  return wire::PROTOCOL_VERSION;
}

}  // namespace hc::rpc
