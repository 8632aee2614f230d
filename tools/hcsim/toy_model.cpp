#include "tools/hcsim/toy_model.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "actors/scheduler/tracking.hpp"

namespace hc::sim {
toy_model::toy_model(const toy_model_config& cfg) : cfg_(cfg) {
  assert(cfg_.conv_kernel >= 1 && cfg_.chunk > 0 && cfg_.lanes > 0);
}

void toy_model::kv(std::size_t pos, token_id t, std::span<std::byte> out) const {
  assert(out.size() == cfg_.token_bytes());
  const toy::shape sh = shape();
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  for (std::size_t w = 0; w < sh.kv_layers * sh.layer_words(); ++w)
    toy::write_kv_word(sh, p, 0, pos, t, w);
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
    auto* lanes = reinterpret_cast<unsigned char*>(layer + cfg_.conv_bytes());
    for (std::size_t j = 0; j < cfg_.lanes; ++j)
      toy::store_u64(lanes + j * 8, toy::lane_step(toy::load_u64(lanes + j * 8), pos, t, l, j));
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

toy::shape toy_model::shape() const noexcept {
  toy::shape s;
  s.kv_layers = static_cast<std::uint32_t>(cfg_.kv_layers);
  s.kv_layer_bytes = static_cast<std::uint32_t>(cfg_.kv_layer_bytes);
  s.ssm_layers = static_cast<std::uint32_t>(cfg_.ssm_layers);
  s.lanes = static_cast<std::uint32_t>(cfg_.lanes);
  s.conv_kernel = static_cast<std::uint32_t>(cfg_.conv_kernel);
  return s;
}

toy::forward_batch toy_model::plan_extend(std::span<const extend_job> jobs) const {
  const std::size_t C = cfg_.chunk;
  toy::forward_batch b;
  std::vector<toy::capture> chunk_states;  // (item, tokens advanced), in the kernel's order
  std::vector<packed_extend> shape;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const extend_job& r = jobs[j];
    assert(r.kv.size() == r.tokens.size());
    toy::scan_item it;
    it.working = r.working;
    it.first_token = static_cast<std::uint32_t>(b.tokens.size());
    it.n_tokens = static_cast<std::uint32_t>(r.tokens.size());
    it.first_pos = r.prefix_len;
    b.items.push_back(it);
    const auto item = static_cast<std::uint32_t>(j);
    for (std::size_t i = 0; i < r.tokens.size(); ++i) {
      b.tokens.push_back(r.tokens[i]);
      b.positions.push_back(r.prefix_len + i);
      b.kv_rows.push_back(r.kv[i]);
      if (cfg_.convention == chunk_convention::fla && i % C == 0)
        chunk_states.push_back({item, static_cast<std::uint32_t>(i), no_slot});
      if (cfg_.convention == chunk_convention::mamba2 && (i + 1) % C == 0)
        chunk_states.push_back({item, static_cast<std::uint32_t>(i + 1), no_slot});
    }
    shape.push_back({r.prefix_len, r.tokens.size(), r.mask, r.kernel_seqlen});
  }
  const std::vector<track_source> src =
      compute_track_sources(shape, C, cfg_.conv_kernel, cfg_.convention);
  const std::size_t k1 = cfg_.conv_kernel - 1;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    if (!src[j].mask || jobs[j].track == no_slot) continue;
    const slot_id track = jobs[j].track;
    toy::conv_fix fix;
    fix.dst = track;
    fix.values = static_cast<std::uint32_t>(b.conv_values.size());
    if (src[j].from_final_state) {
      b.captures.push_back({static_cast<std::uint32_t>(j), b.items[j].n_tokens, track});
    } else if (src[j].chunk_state_index >= 0 &&
               static_cast<std::size_t>(src[j].chunk_state_index) < chunk_states.size()) {
      toy::capture c = chunk_states[static_cast<std::size_t>(src[j].chunk_state_index)];
      c.dst = track;
      b.captures.push_back(c);
    } else {
      fix.fill_lanes = 1;  // out of the tensor
    }
    const std::size_t have = src[j].conv_positions.size();
    assert(have <= k1);
    b.conv_values.resize(b.conv_values.size() + k1, 0);
    for (std::size_t q = 0; q < have; ++q)
      b.conv_values[fix.values + k1 - have + q] =
          b.tokens[static_cast<std::size_t>(src[j].conv_positions[q])];
    b.fixes.push_back(fix);
  }
  return b;
}

toy::forward_batch toy_model::plan_decode(std::span<const decode_job> jobs) const {
  toy::forward_batch b;
  for (const decode_job& d : jobs) {
    toy::scan_item it;
    it.working = d.working;
    it.final_copy = d.track;
    it.first_token = static_cast<std::uint32_t>(b.tokens.size());
    it.n_tokens = 1;
    it.first_pos = d.pos;
    b.items.push_back(it);
    b.tokens.push_back(d.token);
    b.positions.push_back(d.pos);
    b.kv_rows.push_back(d.kv);
  }
  return b;
}

}  // namespace hc::sim
