#pragma once
// The toy hybrid model (architecture.md §5): deterministic bytes for every KV entry and SSM
// slot, so any page or state restored from L1, L2 or L3 can be recomputed and compared
// bit for bit. Shared by tests and hcsim.
//
//  * KV entry of a token = f(position, token, layer), `kv_layers` layers of `kv_layer_bytes`.
//  * SSM slot = per SSM layer: the conv state (the last K-1 input tokens, int32, oldest
//    first, zero where the sequence is shorter) and the temporal state (`lanes` 64-bit
//    lanes folded over every token with its position and layer).
//  * The extend pass works like a chunked scan over a packed batch: it produces the
//    per-chunk states of every request in the kernel's convention (FLA: the state at each
//    chunk start, ceil(extend/C) of them; Mamba2: the state at each full chunk end,
//    floor(extend/C)) and takes each track snapshot from the index the node computed
//    (compute_track_sources, spec §3.10) — never from a position it works out itself, so
//    a wrong index is a wrong snapshot.
//
// Thread safety: const methods only; a toy_model may be shared.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "actors/common/ids.hpp"
#include "actors/common/strategy.hpp"
#include "gpu/toy_forward.hpp"

namespace hc::sim {

struct toy_model_config {
  std::size_t kv_layers = 2;
  std::size_t kv_layer_bytes = 16;  ///< per token per layer (K and V together)
  std::size_t ssm_layers = 2;
  std::size_t lanes = 4;        ///< 64-bit lanes of one layer's temporal state
  std::size_t conv_kernel = 4;  ///< K; the conv state keeps K-1 inputs
  std::size_t chunk = 64;       ///< C of the scan
  chunk_convention convention = chunk_convention::fla;

  std::size_t token_bytes() const noexcept { return kv_layers * kv_layer_bytes; }
  std::size_t conv_bytes() const noexcept { return (conv_kernel - 1) * 4; }
  std::size_t layer_state_bytes() const noexcept { return conv_bytes() + lanes * 8; }
  std::size_t slot_bytes() const noexcept { return ssm_layers * layer_state_bytes(); }
};

/// One request of a packed extend: its working slot (holds the state after prefix_len
/// tokens on entry, after prefix_len + tokens.size() on return), its new tokens and their
/// KV destinations, and the track decision the node made for it.
struct extend_item {
  std::span<std::byte> working;
  std::size_t prefix_len = 0;
  std::span<const token_id> tokens;
  std::vector<std::span<std::byte>> kv;  ///< one destination per new token
  bool mask = false;
  std::int64_t kernel_seqlen = -1;
  std::span<std::byte> track;  ///< the track slot (when mask)
};

/// The same two forwards by pool ids, for a device that runs them over pools this process
/// does not hold in its memory (CUDA mode): toy_model::plan_extend / plan_decode.
struct extend_job {
  slot_id working = no_slot;
  std::size_t prefix_len = 0;
  std::span<const token_id> tokens;
  std::vector<kv_index> kv;  ///< one row per new token
  bool mask = false;
  std::int64_t kernel_seqlen = -1;
  slot_id track = no_slot;  ///< the track slot (when mask)
};

struct decode_job {
  slot_id working = no_slot;
  std::size_t pos = 0;
  token_id token = 0;
  kv_index kv = 0;
  slot_id track = no_slot;  ///< a decode-boundary snapshot, or no_slot
};

class toy_model {
 public:
  explicit toy_model(const toy_model_config& cfg);
  const toy_model_config& config() const noexcept { return cfg_; }

  /// The KV bytes (token_bytes()) of `t` at `pos`.
  void kv(std::size_t pos, token_id t, std::span<std::byte> out) const;
  std::vector<std::byte> kv(std::size_t pos, token_id t) const;

  /// The slot bytes after `prefix` (an empty prefix is all zero).
  void state_after(std::span<const token_id> prefix, std::span<std::byte> out) const;
  std::vector<std::byte> state_after(std::span<const token_id> prefix) const;

  /// Advances a state by token `t` at position `pos`.
  void advance(std::span<std::byte> state, std::size_t pos, token_id t) const;

  /// The extend forward of a packed batch (see the header comment).
  void extend(std::span<extend_item> batch) const;

  /// A decode step: advances the working slot by `t` at `pos`, writes its KV, and copies
  /// the working slot into `track` if it is not empty (a decode-boundary snapshot).
  void decode(std::span<std::byte> working, std::size_t pos, token_id t, std::span<std::byte> kv,
              std::span<std::byte> track) const;

  /// The pools' layout for a device batch.
  toy::shape shape() const noexcept;
  /// extend() of the jobs as a device batch (gpu/toy_forward.hpp): the chunk states that
  /// the node's track sources name become captures of the scan, and the conv windows of
  /// each track slot fixes after it. Run on the same bytes, it leaves what extend() does.
  toy::forward_batch plan_extend(std::span<const extend_job> jobs) const;
  /// decode() of each job as a device batch.
  toy::forward_batch plan_decode(std::span<const decode_job> jobs) const;

 private:
  toy_model_config cfg_;
};

}  // namespace hc::sim
