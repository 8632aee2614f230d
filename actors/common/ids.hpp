#pragma once
// Identifier types shared by every part of hybridcache. Pure header: standard library only.

#include <cstddef>
#include <cstdint>
#include <limits>

namespace hc {

/// A token id of the model's vocabulary.
using token_id = std::int32_t;
/// An index into the L1 full-attention KV pool (one per token). Index 0 (page 0 when
/// paged) is the reserved dummy and is never handed out.
using kv_index = std::int32_t;
/// A row of the L1 SSM state pool. Slot 0 is the reserved dummy (padded CUDA-graph
/// entries write it) and is never handed out.
using slot_id = std::int32_t;
/// A request row of the request -> token table; rows start at 1.
using row_id = std::int32_t;
/// Namespace of a key (LoRA id / cache salt, SGLang's `extra_key`), interned to an int.
/// Namespace 0 is the default (no extra key).
using namespace_id = std::uint32_t;

/// A request of a session's request table, named by the worker (SGLang's rid, hashed).
using request_handle = std::uint64_t;
/// A worker session on the node; sessions start at 1.
using session_id = std::uint64_t;

/// The most ids a pool's id type holds: a KV pool's token ids (its reserved page 0
/// included) and an SSM pool's slot ids (slot 0 included) must stay below it.
inline constexpr std::size_t max_pool_ids = std::numeric_limits<std::int32_t>::max();

/// "No slot", "no row": SGLang's -1 / None.
inline constexpr slot_id no_slot = -1;
inline constexpr row_id no_row = -1;

/// One slot's state copied onto another (COW, snapshot, donation).
struct slot_copy {
  slot_id src = no_slot;
  slot_id dst = no_slot;
  friend bool operator==(const slot_copy&, const slot_copy&) = default;
};

}  // namespace hc
