#include "actors/scheduler/tracking.hpp"

#include <algorithm>

namespace hc {

std::optional<std::size_t> mamba_cache_chunk_size(std::size_t model_chunk, std::size_t page_size) {
  if (model_chunk == 0 || page_size == 0) return std::nullopt;
  const std::size_t hi = std::max(model_chunk, page_size);
  const std::size_t lo = std::min(model_chunk, page_size);
  if (hi % lo != 0) return std::nullopt;
  return hi;
}

prefill_track plan_prefill_track(std::size_t prefix_len, std::size_t extend_len, std::size_t C,
                                 std::optional<std::size_t> branching, bool lazy, int next,
                                 int pp_size) {
  prefill_track t;
  t.track_entry = next;
  t.next_after = next;
  t.mask = extend_len >= C;
  if (!t.mask) return t;
  std::size_t kernel = prefix_len + extend_len;
  std::size_t aligned = prefix_len + extend_len / C * C;
  if (!lazy) t.next_after = pp_size == 2 ? 1 - next : next;
  if (branching && prefix_len < *branching && *branching < kernel &&
      (*branching - prefix_len) % C == 0) {
    kernel = *branching + 1;  // +1: not the last position, so the chunk state is read
    aligned = *branching;
  }
  t.kernel_seqlen = static_cast<std::int64_t>(kernel);
  t.tracked_len = aligned;
  return t;
}

std::optional<std::size_t> spec_decode_boundary(std::size_t seq_len, std::size_t accepted,
                                                std::size_t interval) noexcept {
  if (interval == 0 || seq_len == 0) return std::nullopt;
  const std::int64_t cur = static_cast<std::int64_t>(seq_len) - 1;
  const std::int64_t prev = cur - static_cast<std::int64_t>(accepted) - 1;
  const std::int64_t i = static_cast<std::int64_t>(interval);
  const auto floordiv = [](std::int64_t a, std::int64_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
  };
  if (floordiv(cur, i) == floordiv(prev, i)) return std::nullopt;
  return static_cast<std::size_t>(floordiv(cur, i) * i);
}

std::size_t chunk_states_of(std::size_t extend_len, std::size_t C, chunk_convention conv) noexcept {
  return conv == chunk_convention::fla ? (extend_len + C - 1) / C : extend_len / C;
}

std::vector<track_source> compute_track_sources(std::span<const packed_extend> batch, std::size_t C,
                                                std::size_t conv_kernel, chunk_convention conv) {
  std::vector<track_source> out(batch.size());
  std::int64_t total = 0;
  for (const packed_extend& r : batch)
    total += static_cast<std::int64_t>(r.extend_len);
  std::int64_t start = 0;   // packed position of the request's first extend token
  std::int64_t offset = 0;  // exclusive prefix sum of chunk-state counts
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const packed_extend& r = batch[i];
    track_source& s = out[i];
    if (r.mask && r.kernel_seqlen >= 0) {
      const std::size_t len = static_cast<std::size_t>(r.kernel_seqlen) - r.prefix_len;
      const std::size_t aligned_len = len / C * C;
      s.mask = true;
      s.aligned_len = aligned_len;
      const std::int64_t end = start + static_cast<std::int64_t>(aligned_len);
      const std::int64_t width = static_cast<std::int64_t>(conv_kernel > 0 ? conv_kernel - 1 : 0);
      for (std::int64_t p = end - width; p < end; ++p)
        if (p >= 0 && p < total) s.conv_positions.push_back(p);
      if (len % C == 0) {
        s.from_final_state = true;
      } else {
        // Index of the state after aligned_len tokens within this request's states.
        const std::int64_t k = static_cast<std::int64_t>(aligned_len / C);
        s.chunk_state_index = offset + (conv == chunk_convention::fla ? k : k - 1);
      }
    }
    start += static_cast<std::int64_t>(r.extend_len);
    offset += static_cast<std::int64_t>(chunk_states_of(r.extend_len, C, conv));
  }
  return out;
}

}  // namespace hc
