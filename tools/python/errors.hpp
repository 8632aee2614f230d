#pragma once
// Internal to the extension hybridcache._native: one C++ exception type per Python
// exception class (registered in native_module.cpp), and the client's errors raised as
// them.

#include <stdexcept>
#include <string>
#include <utility>

#include "actors/common/status.hpp"

namespace hc::python {

struct node_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct invalid_argument_error : node_error {
  using node_error::node_error;
};
struct invalid_config_error : node_error {
  using node_error::node_error;
};
struct out_of_memory_error : node_error {
  using node_error::node_error;
};
struct not_found_error : node_error {
  using node_error::node_error;
};
struct unavailable_error : node_error {
  using node_error::node_error;
};
struct timeout_error : node_error {
  using node_error::node_error;
};
/// A wait a Python signal handler stopped: the handler's exception (KeyboardInterrupt) is
/// what the caller raises (connection::call), with the GIL back.
struct interrupted_error : node_error {
  using node_error::node_error;
};

[[noreturn]] inline void raise(const error& e) {
  const std::string msg = std::string(to_string(e.code)) + ": " + e.message;
  switch (e.code) {
    case errc::invalid_argument:
    case errc::parse_error:
      throw invalid_argument_error(msg);
    case errc::invalid_config:
      throw invalid_config_error(msg);
    case errc::out_of_memory:
      throw out_of_memory_error(msg);
    case errc::not_found:
      throw not_found_error(msg);
    case errc::io_error:
      throw unavailable_error(msg);
    case errc::timeout:
      throw timeout_error(msg);
    case errc::interrupted:
      throw interrupted_error(msg);
    default:
      throw node_error(msg);
  }
}

template <class T>
T value_or_raise(result<T>&& r) {
  if (!r) raise(r.err());
  return std::move(*r);
}
inline void ok_or_raise(const status& s) {
  if (!s) raise(s.err());
}

}  // namespace hc::python
