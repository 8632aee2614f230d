#pragma once
// What `hcctl inspect` prints and what `hcctl top` reads of the node's inspect document
// (actors/node/inspect_document.hpp), apart from the RPC that fetches it, so that both can
// be checked on any document.
//
// Contract: neither function throws, whatever the document's shape. A part that is absent,
// null (an actor that did not answer in time) or of another type than expected (a node of
// another release) reads as empty: an object as {}, a count as 0, a text as "", a flag as
// false. So hcctl prints what the node did say instead of ending on a JSON type error.

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace hc::cli {

/// The text `hcctl inspect` prints for `doc` (without --json): the node's process, its
/// sessions, invariant violations, the L3 store, then each instance's tree, pools, host
/// tier, device pages (with --blocks) and forward stream, one fact a line.
std::string inspect_text(const nlohmann::json& doc);

/// The tiers' figures `hcctl top` takes from inspect, beside the node's stats (which sum
/// the host tiers' pools and traffic): "host_tiers" (how many instances have one) and the
/// L3 store's "l3_pages_written" and "l3_pages_read". Every name is present (0 when the
/// document has none of it).
std::map<std::string, double> tier_figures(const nlohmann::json& doc);

}  // namespace hc::cli
