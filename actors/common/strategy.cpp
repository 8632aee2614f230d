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

std::optional<chunk_convention> parse_chunk_convention(std::string_view name) noexcept {
  if (name == "fla" || name == "gdn") return chunk_convention::fla;
  if (name == "mamba2") return chunk_convention::mamba2;
  return std::nullopt;
}

std::string_view to_string(pd_mode m) noexcept {
  switch (m) {
    case pd_mode::none:
      return "none";
    case pd_mode::prefill:
      return "prefill";
    case pd_mode::decode:
      return "decode";
  }
  return "unknown";
}

std::optional<pd_mode> parse_pd_mode(std::string_view name) noexcept {
  if (name == "none") return pd_mode::none;
  if (name == "prefill") return pd_mode::prefill;
  if (name == "decode") return pd_mode::decode;
  return std::nullopt;
}

}  // namespace hc
