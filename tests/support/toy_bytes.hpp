#pragma once
// The bytes of a toy hybrid model, for tests that move KV pages and SSM states through
// the tiers: a token's KV is a function of (position, token), the state after a prefix a
// fold of its tokens. Any byte restored from any tier can be recomputed and compared.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "actors/common/ids.hpp"

namespace hc::test {

/// The KV bytes of token `tok` at position `pos`.
inline void fill_kv(std::span<std::byte> out, std::size_t pos, token_id tok) {
  for (std::size_t b = 0; b < out.size(); ++b)
    out[b] = static_cast<std::byte>((pos * 131 + static_cast<std::size_t>(tok) * 7 + b) & 0xff);
}
inline std::vector<std::byte> kv_bytes(std::size_t n, std::size_t pos, token_id tok) {
  std::vector<std::byte> out(n);
  fill_kv(out, pos, tok);
  return out;
}

/// The SSM state (`n` bytes) after `prefix`.
inline std::vector<std::byte> state_after(std::span<const token_id> prefix, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  for (token_id t : prefix)
    h = (h ^ static_cast<std::uint64_t>(t)) * 1099511628211ull;
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<std::byte>((h >> (8 * (i % 8))) & 0xff);
  return out;
}

}  // namespace hc::test
