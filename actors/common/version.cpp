#include "actors/common/version.hpp"

#ifndef HC_VERSION
#error "HC_VERSION is CMake's PROJECT_VERSION (actors/common/CMakeLists.txt)"
#endif

namespace hc {

std::string_view version() noexcept {
  return HC_VERSION;
}

}  // namespace hc
