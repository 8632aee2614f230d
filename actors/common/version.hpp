#pragma once
// The release these binaries and libraries are: CMake's project(VERSION), compiled into
// version.cpp alone (a new version rebuilds one file). What `--version` prints and what a
// node's ping answers (node_version).

#include <string_view>

namespace hc {

/// "MAJOR.MINOR.PATCH" of this build, e.g. "0.1.0".
std::string_view version() noexcept;

}  // namespace hc
