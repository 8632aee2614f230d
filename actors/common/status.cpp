#include "actors/common/status.hpp"

namespace hc {

std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::ok:
      return "ok";
    case errc::invalid_argument:
      return "invalid_argument";
    case errc::invalid_config:
      return "invalid_config";
    case errc::out_of_memory:
      return "out_of_memory";
    case errc::not_found:
      return "not_found";
    case errc::double_free:
      return "double_free";
    case errc::invariant_violated:
      return "invariant_violated";
    case errc::parse_error:
      return "parse_error";
    case errc::io_error:
      return "io_error";
    case errc::timeout:
      return "timeout";
    case errc::interrupted:
      return "interrupted";
  }
  return "unknown";
}

}  // namespace hc
