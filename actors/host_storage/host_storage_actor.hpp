#pragma once
// The host_storage actor (one per node): will own the L2 bytes and the L3 store (issue
// "Hierarchical tiers"). For now it exists in the wiring and reports its (empty) tiers.
//
// Messages: (inspect) -> std::string JSON.

#include <caf/fwd.hpp>

namespace hc {

caf::behavior host_storage_actor(caf::event_based_actor* self);

}  // namespace hc
