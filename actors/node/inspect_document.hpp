#pragma once
// The text of an `inspect` answer: the node's document with every instance's parts spliced
// in as the JSON text they came as, and — with `--blocks` — every device KV page of each.
// The radix_cache actor collects the pages (block_listing: what needs its tree, nothing
// else); the scheduler writes them as JSON text straight into the answer. A JSON document object
// per page cost ~1 KB of heap and ~10 µs, so that a page-1 instance of 1 M cached tokens took 13 s
// and 1 GB to list — and its answer was then too large for one RPC message anyway.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/common/status.hpp"
#include "actors/node/node_about.hpp"
#include "actors/radix_cache/radix_tree.hpp"

namespace hc {

/// Largest inspect document the node answers with (a Cap'n Proto message carries 64 MiB;
/// long namespace names, repeated on every page, could pass it below the pages' limit).
inline constexpr std::size_t max_inspect_bytes = std::size_t{56} << 20;

/// An instance's device pages, as radix_tree::device_blocks() lists them.
struct block_listing {
  std::vector<device_block> blocks;
  std::map<namespace_id, std::string> names;  ///< each namespace id's name (missing: "")
  std::string refused;                        ///< why the pages are not listed ("" when they are)
};

/// One instance's part of the document.
struct inspect_part {
  std::string fingerprint;
  std::string tree = "null", stream = "null";   ///< JSON text
  std::shared_ptr<const block_listing> blocks;  ///< with --blocks (null: not asked)
};

/// `doc` (the node's part) with an "instances" array of `parts` (each
/// {"fingerprint","tree","stream"}, the tree with its "blocks" when listed) into `out`.
/// out_of_memory, writing nothing, when an instance refused its listing, the instances'
/// pages together pass `max_blocks`, or the text could pass max_inspect_bytes.
status assemble_inspect(const nlohmann::json& doc, const std::vector<inspect_part>& parts,
                        std::uint64_t max_blocks, std::string& out);

/// At least as many bytes as append_blocks_json writes for `l`.
std::size_t blocks_json_bound(const block_listing& l);

/// Appends `[{"hash":H,"parent":P|null,"checkpoint":B,"namespace":"name"},...]` to `out`.
/// Names need not be UTF-8 (invalid bytes become U+FFFD, as json_text does).
void append_blocks_json(std::string& out, const block_listing& l);

/// Why an instance holding `pages` device pages is not listed when at most `limit` may be.
std::string too_many_blocks(std::string_view instance, std::uint64_t pages, std::uint64_t limit);
/// Why `pages` over `instances` instances are not listed (more than `limit` together).
std::string too_many_blocks_together(std::uint64_t pages, std::size_t instances,
                                     std::uint64_t limit);
/// The document's "node": {"program","version","protocol" (what `about` says; absent when
/// it says nothing), "pid", "started" (UTC, ISO 8601 to the second), "uptime_seconds",
/// "settings": {name: value (null: not set)}, "given": [the names set on the command line
/// or in a config file, in `about`'s order]}.
nlohmann::json node_document(const node_about& about, std::chrono::system_clock::time_point started,
                             double uptime_seconds, long pid);

/// Why an inspect document of `bytes` is not sent.
std::string too_large_inspect(std::size_t bytes);

}  // namespace hc
