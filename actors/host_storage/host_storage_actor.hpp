#pragma once
// The host_storage actor (one per node): will own the L2 bytes and the L3 store (issue
// "Hierarchical tiers"). For now it exists in the wiring and reports its (empty) tiers.
//
// Messages: (inspect) -> std::string JSON.

#include <caf/fwd.hpp>

#include "actors/common/metrics_sink.hpp"

namespace hc {

/// (Takes the metrics sink it will report to; a spawn with no arguments trips a null
/// dereference inside CAF 0.17's init_fun_factory, flagged by UBSan.)
caf::behavior host_storage_actor(caf::event_based_actor* self, metrics_sink* metrics);

}  // namespace hc
