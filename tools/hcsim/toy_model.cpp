#include "tools/hcsim/toy_model.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "actors/scheduler/tracking.hpp"

namespace hc::sim {
namespace {

std::uint64_t mix(std::uint64_t x) noexcept {  // splitmix64 finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

toy_model::toy_model(const toy_model_config& cfg) : cfg_(cfg) {
  assert(cfg_.conv_kernel >= 1 && cfg_.chunk > 0 && cfg_.lanes > 0);
}

void toy_model::kv(std::size_t pos, token_id t, std::span<std::byte> out) const {
  assert(out.size() == cfg_.token_bytes());
  std::size_t at = 0;
  for (std::size_t l = 0; l < cfg_.kv_layers; ++l)
    for (std::size_t b = 0; b < cfg_.kv_layer_bytes; b += 8) {
      const std::uint64_t v = mix((static_cast<std::uint64_t>(pos) << 32) ^
                                  static_cast<std::uint32_t>(t) ^ ((l * 131 + b) << 20));
      const std::size_t n = std::min<std::size_t>(8, cfg_.kv_layer_bytes - b);
      std::memcpy(out.data() + at, &v, n);
      at += n;
    }
}

std::vector<std::byte> toy_model::kv(std::size_t pos, token_id t) const {
  std::vector<std::byte> out(cfg_.token_bytes());
  kv(pos, t, out);
  return out;
}

void toy_model::advance(std::span<std::byte> state, std::size_t pos, token_id t) const {
  assert(state.size() == cfg_.slot_bytes());
  const std::size_t k1 = cfg_.conv_kernel - 1;
  for (std::size_t l = 0; l < cfg_.ssm_layers; ++l) {
    std::byte* layer = state.data() + l * cfg_.layer_state_bytes();
    if (k1 > 0) {  // conv: shift the window by one input
      std::memmove(layer, layer + 4, (k1 - 1) * 4);
      const auto v = static_cast<std::int32_t>(t);
      std::memcpy(layer + (k1 - 1) * 4, &v, 4);
    }
    std::byte* lanes = layer + cfg_.conv_bytes();
    for (std::size_t j = 0; j < cfg_.lanes; ++j) {
      std::uint64_t s = 0;
      std::memcpy(&s, lanes + j * 8, 8);
      s = mix(s ^ (static_cast<std::uint64_t>(static_cast<std::uint32_t>(t)) << 17) ^
              (static_cast<std::uint64_t>(pos) * 0x9e3779b97f4a7c15ull) ^ (l << 8) ^ j);
      std::memcpy(lanes + j * 8, &s, 8);
    }
  }
}

void toy_model::state_after(std::span<const token_id> prefix, std::span<std::byte> out) const {
  std::fill(out.begin(), out.end(), std::byte{0});
  for (std::size_t i = 0; i < prefix.size(); ++i)
    advance(out, i, prefix[i]);
}

std::vector<std::byte> toy_model::state_after(std::span<const token_id> prefix) const {
  std::vector<std::byte> out(cfg_.slot_bytes());
  state_after(prefix, out);
  return out;
}

void toy_model::extend(std::span<extend_item> batch) const {
  const std::size_t C = cfg_.chunk;
  const std::size_t sb = cfg_.slot_bytes();
  // The packed inputs and the packed per-chunk states, in the kernel's convention.
  std::vector<token_id> packed;
  std::vector<std::vector<std::byte>> chunk_states;
  std::vector<packed_extend> shape;
  for (extend_item& r : batch) {
    assert(r.working.size() == sb && r.kv.size() == r.tokens.size());
    packed.insert(packed.end(), r.tokens.begin(), r.tokens.end());
    shape.push_back({r.prefix_len, r.tokens.size(), r.mask, r.kernel_seqlen});
    std::vector<std::byte> s(r.working.begin(), r.working.end());  // resumes from the slot
    const std::size_t n = r.tokens.size();
    for (std::size_t i = 0; i < n; ++i) {
      if (cfg_.convention == chunk_convention::fla && i % C == 0) chunk_states.push_back(s);
      advance(s, r.prefix_len + i, r.tokens[i]);
      kv(r.prefix_len + i, r.tokens[i], r.kv[i]);
      if (cfg_.convention == chunk_convention::mamba2 && (i + 1) % C == 0)
        chunk_states.push_back(s);
    }
    std::memcpy(r.working.data(), s.data(), sb);
  }
  const std::vector<track_source> src =
      compute_track_sources(shape, C, cfg_.conv_kernel, cfg_.convention);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    extend_item& r = batch[i];
    if (!src[i].mask || r.track.empty()) continue;
    assert(r.track.size() == sb);
    if (src[i].from_final_state) {
      std::memcpy(r.track.data(), r.working.data(), sb);
    } else if (src[i].chunk_state_index >= 0 &&
               static_cast<std::size_t>(src[i].chunk_state_index) < chunk_states.size()) {
      const auto& cs = chunk_states[static_cast<std::size_t>(src[i].chunk_state_index)];
      std::memcpy(r.track.data(), cs.data(), sb);
    } else {
      std::fill(r.track.begin(), r.track.end(), std::byte{0xee});  // out of the tensor
    }
    // The conv rows come from the packed conv inputs at the positions the node computed.
    const std::size_t k1 = cfg_.conv_kernel - 1;
    for (std::size_t l = 0; l < cfg_.ssm_layers; ++l) {
      std::byte* conv = r.track.data() + l * cfg_.layer_state_bytes();
      std::memset(conv, 0, k1 * 4);
      const std::size_t have = src[i].conv_positions.size();
      for (std::size_t q = 0; q < have; ++q) {
        const auto v =
            static_cast<std::int32_t>(packed[static_cast<std::size_t>(src[i].conv_positions[q])]);
        std::memcpy(conv + (k1 - have + q) * 4, &v, 4);
      }
    }
  }
}

void toy_model::decode(std::span<std::byte> working, std::size_t pos, token_id t,
                       std::span<std::byte> kv_out, std::span<std::byte> track) const {
  advance(working, pos, t);
  kv(pos, t, kv_out);
  if (!track.empty()) std::memcpy(track.data(), working.data(), cfg_.slot_bytes());
}

}  // namespace hc::sim
