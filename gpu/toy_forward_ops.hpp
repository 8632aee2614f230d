#pragma once
// The toy hybrid model's arithmetic (tools/hcsim/toy_model.hpp) and the per-thread work of
// its forward batch (gpu/toy_forward.hpp), written once for the host and for the CUDA
// kernels (gpu/cuda_toy_kernels.cu): the KV word of a token, one step of an SSM lane, the
// scan of one lane or conv window over a request's tokens, a track slot's fix-up.
// Bytes are read and written one at a time: slot lanes follow 12-byte conv windows, so they
// are not 8-byte aligned.
// No CUDA header here, and C++17 only (nvcc compiles it): under nvcc the functions are
// also __device__.

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define HC_TOY_FN __host__ __device__ inline
#else
#define HC_TOY_FN inline
#endif

namespace hc::toy {

/// splitmix64's finaliser.
HC_TOY_FN std::uint64_t mix(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// The 8-byte KV word at byte `b` (a multiple of 8) of layer `layer` of token `t` at `pos`.
HC_TOY_FN std::uint64_t kv_word(std::uint64_t pos, std::int32_t t, std::uint64_t layer,
                                std::uint64_t b) noexcept {
  return mix((pos << 32) ^ static_cast<std::uint32_t>(t) ^ ((layer * 131 + b) << 20));
}

/// Lane `lane` of SSM layer `layer` after token `t` at `pos`.
HC_TOY_FN std::uint64_t lane_step(std::uint64_t s, std::uint64_t pos, std::int32_t t,
                                  std::uint64_t layer, std::uint64_t lane) noexcept {
  return mix(s ^ (static_cast<std::uint64_t>(static_cast<std::uint32_t>(t)) << 17) ^
             (pos * 0x9e3779b97f4a7c15ull) ^ (layer << 8) ^ lane);
}

HC_TOY_FN std::uint64_t load_u64(const unsigned char* p) noexcept {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

HC_TOY_FN void store_u64(unsigned char* p, std::uint64_t v, std::size_t n = 8) noexcept {
  for (std::size_t i = 0; i < n; ++i, v >>= 8)
    p[i] = static_cast<unsigned char>(v);
}

HC_TOY_FN std::int32_t load_i32(const unsigned char* p) noexcept {
  const std::uint32_t v = static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
                          static_cast<std::uint32_t>(p[2]) << 16 |
                          static_cast<std::uint32_t>(p[3]) << 24;
  return static_cast<std::int32_t>(v);
}

HC_TOY_FN void store_i32(unsigned char* p, std::int32_t v) noexcept {
  store_u64(p, static_cast<std::uint32_t>(v), 4);
}

inline constexpr std::uint32_t max_conv_kernel = 17;  ///< conv windows of up to 16 inputs

/// The pools' layout: toy_model_config's sizes.
struct shape {
  std::uint32_t kv_layers = 0;
  std::uint32_t kv_layer_bytes = 0;  ///< per token per layer
  std::uint32_t ssm_layers = 0;
  std::uint32_t lanes = 0;        ///< 64-bit lanes of one layer's temporal state
  std::uint32_t conv_kernel = 1;  ///< K: the conv window keeps K − 1 int32 inputs

  HC_TOY_FN std::size_t token_bytes() const noexcept {
    return std::size_t{kv_layers} * kv_layer_bytes;
  }
  HC_TOY_FN std::size_t layer_words() const noexcept { return (kv_layer_bytes + 7u) / 8u; }
  HC_TOY_FN std::size_t conv_bytes() const noexcept { return std::size_t{conv_kernel - 1} * 4u; }
  HC_TOY_FN std::size_t layer_state_bytes() const noexcept {
    return conv_bytes() + std::size_t{lanes} * 8u;
  }
  HC_TOY_FN std::size_t slot_bytes() const noexcept { return ssm_layers * layer_state_bytes(); }
};

struct scan_item {
  std::int32_t working = -1;      ///< slot advanced in place
  std::int32_t final_copy = -1;   ///< slot that also receives the final state, or −1
  std::uint32_t first_token = 0;  ///< into forward_batch::tokens
  std::uint32_t n_tokens = 0;
  std::uint64_t first_pos = 0;  ///< the position of its first token
};

struct capture {
  std::uint32_t item = 0;   ///< into forward_batch::items
  std::uint32_t count = 0;  ///< tokens advanced (0 = the state on entry)
  std::int32_t dst = -1;    ///< slot whose lanes receive that state
};

struct conv_fix {
  std::int32_t dst = -1;
  std::uint32_t fill_lanes = 0;  ///< 1: lanes become 0xee bytes
  std::uint32_t values = 0;      ///< offset into forward_batch::conv_values (K − 1 of them)
};

// ---- the per-thread work, shared by run_on_host and the kernels ----------------------------

/// Word `word` (layer · layer_words + w) of token `g`'s KV row.
HC_TOY_FN void write_kv_word(const shape& s, unsigned char* kv, std::int32_t row, std::uint64_t pos,
                             std::int32_t t, std::size_t word) noexcept {
  const std::size_t layer = word / s.layer_words();
  const std::size_t b = (word % s.layer_words()) * 8u;
  const std::size_t n = s.kv_layer_bytes - b < 8u ? s.kv_layer_bytes - b : 8u;
  unsigned char* out =
      kv + static_cast<std::size_t>(row) * s.token_bytes() + layer * s.kv_layer_bytes + b;
  store_u64(out, kv_word(pos, t, layer, b), n);
}

HC_TOY_FN unsigned char* layer_at(const shape& s, unsigned char* ssm, std::int32_t slot,
                                  std::size_t layer) noexcept {
  return ssm + static_cast<std::size_t>(slot) * s.slot_bytes() + layer * s.layer_state_bytes();
}

/// Lane `lane` of layer `layer` of item `index`: advanced over its tokens, captured on the way.
HC_TOY_FN void scan_lane(const shape& s, unsigned char* ssm, const scan_item& it,
                         std::uint32_t index, const std::int32_t* tokens, const capture* caps,
                         std::size_t n_caps, std::size_t layer, std::size_t lane) noexcept {
  const std::size_t at = s.conv_bytes() + lane * 8u;
  std::uint64_t v = load_u64(layer_at(s, ssm, it.working, layer) + at);
  for (std::uint32_t c = 0;; ++c) {
    for (std::size_t k = 0; k < n_caps; ++k)
      if (caps[k].item == index && caps[k].count == c)
        store_u64(layer_at(s, ssm, caps[k].dst, layer) + at, v);
    if (c == it.n_tokens) break;
    v = lane_step(v, it.first_pos + c, tokens[it.first_token + c], layer, lane);
  }
  store_u64(layer_at(s, ssm, it.working, layer) + at, v);
  if (it.final_copy >= 0) store_u64(layer_at(s, ssm, it.final_copy, layer) + at, v);
}

/// The conv window of layer `layer` of an item: shifted by each of its tokens.
HC_TOY_FN void scan_conv(const shape& s, unsigned char* ssm, const scan_item& it,
                         const std::int32_t* tokens, std::size_t layer) noexcept {
  const std::size_t k1 = s.conv_kernel - 1;
  std::int32_t w[max_conv_kernel];
  unsigned char* p = layer_at(s, ssm, it.working, layer);
  for (std::size_t q = 0; q < k1; ++q)
    w[q] = load_i32(p + 4 * q);
  for (std::uint32_t c = 0; c < it.n_tokens && k1 > 0; ++c) {
    for (std::size_t q = 0; q + 1 < k1; ++q)
      w[q] = w[q + 1];
    w[k1 - 1] = tokens[it.first_token + c];
  }
  for (std::size_t q = 0; q < k1; ++q) {
    store_i32(p + 4 * q, w[q]);
    if (it.final_copy >= 0) store_i32(layer_at(s, ssm, it.final_copy, layer) + 4 * q, w[q]);
  }
}

/// A track slot's layer `layer` after the scan: its conv window, and 0xee lanes if asked.
HC_TOY_FN void apply_fix(const shape& s, unsigned char* ssm, const conv_fix& f,
                         const std::int32_t* conv_values, std::size_t layer) noexcept {
  unsigned char* p = layer_at(s, ssm, f.dst, layer);
  for (std::size_t q = 0; q + 1 < s.conv_kernel; ++q)
    store_i32(p + 4 * q, conv_values[f.values + q]);
  if (f.fill_lanes)
    for (std::size_t b = s.conv_bytes(); b < s.layer_state_bytes(); ++b)
      p[b] = 0xee;
}

}  // namespace hc::toy
