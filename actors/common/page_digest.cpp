#include "actors/common/page_digest.hpp"

namespace hc {

std::int64_t block_hash_of(const page_digest& d) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v = (v << 8) | d.bytes[static_cast<std::size_t>(i)];
  return static_cast<std::int64_t>(v);  // two's complement, as int(hex[:16], 16) - 2^64
}

}  // namespace hc
