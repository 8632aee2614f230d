#pragma once
// Snapshot tracking for the extra_buffer strategies (cache-semantics.md §3.10): where the
// kernel must copy an SSM/conv snapshot into a track slot, and from which packed index.
// Pure functions of lengths; no state.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "actors/common/strategy.hpp"

namespace hc {

/// C = max(model chunk, page_size); error (nullopt) unless max % min == 0.
std::optional<std::size_t> mamba_cache_chunk_size(std::size_t model_chunk, std::size_t page_size);

/// Per-request prefill decision (SGLang _mamba_radix_cache_v2_req_prepare_for_extend).
struct prefill_track {
  bool mask = false;                ///< snapshot this request (extend_len >= C)
  std::int64_t kernel_seqlen = -1;  ///< position the kernel tracks up to (-1 if no mask)
  std::size_t tracked_len = 0;      ///< tokens the snapshot covers (if mask)
  int track_entry = 0;              ///< ping-pong entry written (next before any flip)
  int next_after = 0;               ///< next_track_idx after this extend
};

/// REQUIRES: C > 0. `branching` is the request's mamba_branching_seqlen, if any.
/// `pp_size` is 1 or 2; `lazy` never flips at prefill.
prefill_track plan_prefill_track(std::size_t prefix_len, std::size_t extend_len, std::size_t C,
                                 std::optional<std::size_t> branching, bool lazy, int next,
                                 int pp_size);

/// Decode: true iff the sequence length reached by this step is a multiple of interval.
constexpr bool is_decode_boundary(std::size_t seq_len, std::size_t interval) noexcept {
  return interval > 0 && seq_len % interval == 0;
}

/// Speculative decode: `seq_len` after verification, `accepted` draft tokens accepted.
/// cur = seq_len-1, prev = cur-accepted-1; boundary iff cur/I != prev/I; the tracked
/// length is then (cur/I)*I. nullopt if no boundary was crossed.
std::optional<std::size_t> spec_decode_boundary(std::size_t seq_len, std::size_t accepted,
                                                std::size_t interval) noexcept;

/// One request of a packed extend batch, for the kernel-side indices.
struct packed_extend {
  std::size_t prefix_len = 0;
  std::size_t extend_len = 0;
  bool mask = false;
  std::int64_t kernel_seqlen = -1;
};

/// Where a masked request's snapshot comes from (kernel side).
struct track_source {
  bool mask = false;
  /// Packed input positions (into the concatenated extend tokens) whose causal-conv
  /// inputs form the conv snapshot: the K-1 positions ending just before the aligned end,
  /// clamped to the packed batch ([0, total)). Fewer than K-1 when clamped.
  std::vector<std::int64_t> conv_positions;
  /// True: copy the request's final state (its working slot) — the aligned end is the end
  /// of its extend. False: copy per-chunk state `chunk_state_index`.
  bool from_final_state = false;
  std::int64_t chunk_state_index = -1;
  /// Tokens of the extend the snapshot covers (aligned_len).
  std::size_t aligned_len = 0;
};

/// Number of per-chunk states a request of extend_len contributes to the packed tensor.
std::size_t chunk_states_of(std::size_t extend_len, std::size_t C, chunk_convention conv) noexcept;

/// Kernel indices for a packed batch (SGLang _init_track_conv_indices /
/// _init_track_ssm_indices). `conv_kernel` is K (conv width); snapshots keep K-1 inputs.
/// The chunk-state index is offset_i + (the index of the state after aligned_len tokens
/// under `conv`), offset_i = exclusive prefix sum of chunk_states_of over the batch.
std::vector<track_source> compute_track_sources(std::span<const packed_extend> batch, std::size_t C,
                                                std::size_t conv_kernel, chunk_convention conv);

}  // namespace hc
