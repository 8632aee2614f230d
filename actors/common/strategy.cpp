#include "actors/common/strategy.hpp"

namespace hc {

std::string_view to_string(strategy s) noexcept {
  switch (s) {
    case strategy::no_buffer:
      return "no_buffer";
    case strategy::extra_buffer:
      return "extra_buffer";
    case strategy::extra_buffer_lazy:
      return "extra_buffer_lazy";
  }
  return "unknown";
}

std::optional<strategy> parse_strategy(std::string_view name) noexcept {
  if (name == "no_buffer" || name == "auto") return strategy::no_buffer;
  if (name == "extra_buffer") return strategy::extra_buffer;
  if (name == "extra_buffer_lazy") return strategy::extra_buffer_lazy;
  return std::nullopt;
}

std::string_view to_string(chunk_convention c) noexcept {
  return c == chunk_convention::fla ? "fla" : "mamba2";
}

}  // namespace hc
