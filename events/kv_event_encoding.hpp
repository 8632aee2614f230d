#pragma once
// The wire format of KV events (README "Route on it"): vLLM's event batch, map-encoded
// msgpack, plus the hybrid model's cache group. One batch:
//   {"ts": float seconds since the epoch, "events": [event, ...]}
// and each event a map with its "type":
//   {"type": "BlockStored", "block_hashes": [int64, ...], "parent_block_hash": int64 | nil,
//    "token_ids": [int, ...], "block_size": int, "lora_id": nil, "medium": "GPU",
//    "cache_group": "full" | "mamba"}
//   {"type": "BlockRemoved", "block_hashes": [int64, ...], "medium": "GPU",
//    "cache_group": "full" | "mamba"}
//   {"type": "AllBlocksCleared"}
// A "full" BlockStored covers consecutive pages of one chain (each page's parent is the
// previous one's hash; the first's is parent_block_hash), token_ids all their tokens.
// A "mamba" event is one SSM state checkpoint, named by the hash of the page it ends (a
// page stored before it, removed after it): a prefix resumes at its deepest checkpointed
// page. No namespace is in the events: the topic names it.

#include <span>
#include <string>

#include "actors/radix_cache/kv_events.hpp"

namespace hc::events {

/// The msgpack bytes of one batch; consecutive events that chain (full, stored) or share
/// a type and group (removed) are merged as vLLM merges them.
std::string encode_batch(double ts, std::span<const kv_event> events);

}  // namespace hc::events
