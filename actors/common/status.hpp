#pragma once
// Errors are values (design/style.md §8). One project-wide error enum; a miss or a partial
// hit is never an error. `result<T>` carries either a value or an `error`; it is
// [[nodiscard]] so a failure cannot be dropped silently. No exception crosses a boundary.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace hc {

/// Project error codes. They travel inside the node's jobs and results as values (CAF 0.17
/// has no CAF_ERROR_CODE_ENUM; no actor message carries a caf::error of ours).
enum class errc : std::uint8_t {
  ok = 0,
  invalid_argument,    ///< a parameter is out of range or malformed
  invalid_config,      ///< an option combination is rejected (names the options)
  out_of_memory,       ///< a pool cannot satisfy an allocation even after eviction
  not_found,           ///< unknown request / node handle
  double_free,         ///< an id was returned twice
  invariant_violated,  ///< an internal invariant failed (a bug; reported, never crashes)
  parse_error,         ///< malformed input file or message
  io_error,            ///< file or socket failure
  timeout,             ///< no answer within the caller's deadline (client side)
  interrupted,         ///< the caller stopped waiting: a signal (client side)
};

/// Stable lowercase name of an error code ("out_of_memory").
std::string_view to_string(errc code) noexcept;

/// An error: a code plus a human-readable message naming the offending input.
struct error {
  errc code = errc::ok;
  std::string message;
};

/// Either a T or an error.
template <class T>
class [[nodiscard]] result {
 public:
  result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  result(error err) : v_(std::move(err)) {}  // NOLINT
  result(errc code, std::string msg) : v_(error{code, std::move(msg)}) {}

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  /// REQUIRES: ok().
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  /// REQUIRES: !ok().
  const error& err() const { return std::get<1>(v_); }

 private:
  std::variant<T, error> v_;
};

/// A result without a value.
class [[nodiscard]] status {
 public:
  status() = default;
  status(error err) : err_(std::move(err)) {}  // NOLINT: implicit by design
  status(errc code, std::string msg) : err_{code, std::move(msg)} {}
  static status success() { return {}; }

  bool ok() const noexcept { return err_.code == errc::ok; }
  explicit operator bool() const noexcept { return ok(); }
  const error& err() const { return err_; }

 private:
  error err_;
};

}  // namespace hc
