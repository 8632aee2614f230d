#pragma once
// The bookkeeping of one request (cache-semantics.md §2.6, §3.6-§3.10). Owned by its
// session's request_manager (in the node: inside the instance's radix_cache actor); slot
// ids and node refs in it are handles into the radix tree of the same instance.
//
// Slot ownership while the request lives: `working` and the non -1 ping-pong entries are
// the request's (counted as "held" by the idle invariant); a slot donated to the tree
// leaves the record in the same step.

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "actors/common/ids.hpp"
#include "actors/radix_cache/radix_node.hpp"

namespace hc {

struct request_record {
  request_handle handle = 0;
  namespace_id ns = 0;
  /// Prompt followed by the output tokens known so far.
  std::vector<token_id> tokens;
  std::size_t input_len = 0;

  row_id row = no_row;
  /// The request -> token row: KV index of every position [0, kv_allocated).
  std::vector<kv_index> row_kv;
  std::size_t kv_committed = 0;
  std::size_t kv_allocated() const noexcept { return row_kv.size(); }

  /// Working slot (read and updated in place by the forward pass).
  slot_id working = no_slot;
  /// Ping-pong track slots (extra_buffer strategies); -1 = empty entry (lazy).
  std::array<slot_id, 2> pingpong{no_slot, no_slot};
  bool has_pingpong = false;
  int next_track_idx = 0;
  /// mamba_last_track_seqlen: tokens covered by the newest snapshot; nullopt = none.
  std::optional<std::size_t> tracked_len;
  /// Length of the prefix whose KV belongs to the tree (and is locked through last_node).
  std::size_t cache_protected_len = 0;
  node_ref last_node;
  bool locked = false;
  std::optional<std::size_t> branching;

  /// Deferred data operations for the next extend (§3.9).
  slot_id cow_src = no_slot;
  bool needs_clear = false;
  /// extra_buffer_lazy: false when the request finished at a boundary whose prealloc failed.
  bool lazy_is_insert = true;
  /// A decode step prepared and not yet processed.
  struct prepared_decode {
    std::size_t len = 0;  ///< the KV length it reaches
    /// extra_buffer_lazy: its boundary preallocated the other track slot and moved
    /// next_track_idx to it (the step writes its snapshot there, not into the keep slot).
    bool lazy_flip = false;
    /// extra_buffer_lazy: its boundary could not preallocate and writes its snapshot into
    /// the only track slot, the keep slot.
    bool lazy_overwrite = false;
  };
  /// The decode steps prepared and not yet processed, oldest first (at most 2: with
  /// overlap scheduling step k+1 is prepared before the results of step k).
  std::array<prepared_decode, 2> prepared_decodes{};
  std::size_t prepared_count = 0;
};

}  // namespace hc
