#pragma once
// Whether a client's name or key is printable text (no control characters): the rule of
// Store identities, their keys and sidecar key suffixes. Vocabulary header: standard
// library only.

#include <string_view>

namespace hc {

/// True unless `s` holds an ASCII control character (below 0x20, or DEL). Bytes of
/// UTF-8 sequences count as printable.
inline bool is_printable_text(std::string_view s) noexcept {
  for (char ch : s)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) return false;
  return true;
}

}  // namespace hc
