#include "schema/buffered_input.hpp"

#include <algorithm>
#include <cstring>

namespace hc::wire_convert {

buffered_input::buffered_input(kj::AsyncInputStream& inner, std::size_t capacity)
    : inner_(inner), buf_(kj::heapArray<kj::byte>(std::max<std::size_t>(capacity, 64))) {}

std::size_t buffered_input::take(kj::byte* dst, std::size_t n) noexcept {
  const std::size_t k = std::min(n, end_ - begin_);
  if (k > 0) std::memcpy(dst, buf_.begin() + begin_, k);
  begin_ += k;
  if (begin_ == end_) begin_ = end_ = 0;
  return k;
}

kj::Promise<std::size_t> buffered_input::tryRead(void* buffer, std::size_t min_bytes,
                                                 std::size_t max_bytes) {
  auto* dst = static_cast<kj::byte*>(buffer);
  const std::size_t have = take(dst, max_bytes);
  if (have >= min_bytes) return have;
  // The buffer is empty now; the caller needs `min_bytes - have` more.
  if (max_bytes - have >= buf_.size()) {
    // As much as the buffer holds or more: straight into the caller's memory, no copy.
    return inner_.tryRead(dst + have, min_bytes - have, max_bytes - have)
        .then([have](std::size_t got) { return have + got; });
  }
  return inner_.tryRead(buf_.begin(), min_bytes - have, buf_.size())
      .then([this, dst, have, max_bytes](std::size_t got) {
        end_ = got;
        return have + take(dst + have, max_bytes - have);
      });
}

}  // namespace hc::wire_convert
