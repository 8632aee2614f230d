#pragma once
// The toy hybrid model's forward (tools/hcsim/toy_model.hpp) as a flat batch that a device
// runs over the L1 pools: what CUDA mode's hcsim enqueues on its worker stream
// (gpu/cuda_toy_forward.hpp) and what run_on_host() does on host memory, with the same
// per-thread functions (gpu/toy_forward_ops.hpp), so that a test compares the two byte
// for byte.
//
// A batch has four parts:
//  * tokens: each new token with its position and its KV row (the KV kernel writes
//    token_bytes at row · token_bytes, one thread per 8-byte word);
//  * scan items: one request each, its working slot advanced over its run of tokens (one
//    thread per SSM layer and lane, one per layer for the conv window); `final_copy`, when
//    set, receives the whole final state too (a decode-boundary snapshot);
//  * captures: "when item i has advanced `count` tokens, copy its lanes into slot dst" —
//    the per-chunk states of the scan, as the node's track sources chose them (the caller
//    translates chunk-state indices into captures, toy_model::plan_extend);
//  * conv fixes, run after the scan: a track slot's conv windows from the given packed
//    inputs (conv_kernel − 1 values per fix, zero-padded at the front by the caller), and
//    with fill_lanes its lanes set to 0xee (a source outside the chunk-state tensor).
// Thread safety: the types are values; run_on_host touches only the spans it is given.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "actors/common/status.hpp"
#include "gpu/toy_forward_ops.hpp"

namespace hc::toy {

struct forward_batch {
  std::vector<std::int32_t> tokens;
  std::vector<std::uint64_t> positions;  ///< per token
  std::vector<std::int32_t> kv_rows;     ///< per token
  std::vector<scan_item> items;
  std::vector<capture> captures;
  std::vector<conv_fix> fixes;
  std::vector<std::int32_t> conv_values;

  /// invalid_argument unless every row, slot, token range, capture and fix is in bounds
  /// of pools of `kv_rows_total` tokens and `slots_total` slots (what a device would
  /// otherwise write out of bounds).
  status check(const shape& s, std::size_t kv_rows_total, std::size_t slots_total) const;
};

/// invalid_argument unless the shape is one the kernels run (K ≤ max_conv_kernel).
status check_shape(const shape& s);

/// The batch on host pools (kv: rows of token_bytes; ssm: slots of slot_bytes), in the
/// kernels' order: KV words, scan, fixes. The batch must have passed check().
void run_on_host(const shape& s, const forward_batch& b, std::span<std::byte> kv,
                 std::span<std::byte> ssm);

}  // namespace hc::toy
