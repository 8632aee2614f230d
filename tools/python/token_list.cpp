#include "tools/python/token_list.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

namespace py = pybind11;

namespace hc::python {
namespace {

constexpr std::int64_t lowest_token = std::numeric_limits<token_id>::min();
constexpr std::int64_t highest_token = std::numeric_limits<token_id>::max();

[[noreturn]] void beyond_a_token(const char* what, std::size_t at, std::string_view value) {
  throw py::value_error(
      fmt::format("{}[{}] = {} does not fit a token id (a 32-bit signed int)", what, at, value));
}

std::string type_name(py::handle obj) {
  return py::str(py::type::handle_of(obj).attr("__name__"));
}

/// A buffer view, released when it goes.
struct buffer_view {
  Py_buffer view{};
  bool held = false;
  explicit buffer_view(py::handle src) {
    if (PyObject_GetBuffer(src.ptr(), &view, PyBUF_RECORDS_RO) != 0) throw py::error_already_set();
    held = true;
  }
  ~buffer_view() {
    if (held) PyBuffer_Release(&view);
  }
  buffer_view(const buffer_view&) = delete;
  buffer_view& operator=(const buffer_view&) = delete;
};

/// Whether v fits a token id.
template <class T>
constexpr bool fits(T v) {
  if constexpr (std::is_signed_v<T>)
    return static_cast<std::int64_t>(v) >= lowest_token &&
           static_cast<std::int64_t>(v) <= highest_token;
  else
    return static_cast<std::uint64_t>(v) <= static_cast<std::uint64_t>(highest_token);
}

/// The items of a 1-D buffer of element type T (native byte order), each checked: converted
/// in one pass that only notes whether any did not fit (so that it vectorises), then, for an
/// error, searched for the first that did not.
template <class T>
token_list read_items(const buffer_view& b, const char* what) {
  const auto n =
      static_cast<std::size_t>(b.view.shape ? b.view.shape[0] : b.view.len / b.view.itemsize);
  const Py_ssize_t stride = b.view.strides ? b.view.strides[0] : b.view.itemsize;
  const auto* base = static_cast<const char*>(b.view.buf);
  const auto item = [&](std::size_t i) {
    T v;
    std::memcpy(&v, base + static_cast<Py_ssize_t>(i) * stride, sizeof(T));
    return v;
  };
  token_list out;
  out.ids.resize(n);
  if (stride == static_cast<Py_ssize_t>(sizeof(T)) && n != 0) {
    if constexpr (std::is_same_v<T, token_id>) {
      std::memcpy(out.ids.data(), base, n * sizeof(T));
      return out;
    }
    const T* items = reinterpret_cast<const T*>(base);  // contiguous, aligned as T
    bool all_fit = true;
    for (std::size_t i = 0; i < n; ++i) {
      all_fit &= fits(items[i]);
      out.ids[i] = static_cast<token_id>(items[i]);
    }
    if (all_fit) return out;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const T v = item(i);
    if (!fits(v)) beyond_a_token(what, i, std::to_string(v));
    out.ids[i] = static_cast<token_id>(v);
  }
  return out;
}

/// A 1-D array of integers through the buffer protocol (struct-module format codes).
token_list from_buffer(py::handle src, const char* what) {
  const buffer_view b(src);
  const int ndim = b.view.ndim;
  if (ndim != 1)
    throw py::type_error(
        fmt::format("{}: a {}-dimensional array; tokens are one dimension", what, ndim));
  const std::string_view written = b.view.format ? b.view.format : "B";  // NULL means "B"
  std::string_view format = written;
  bool native = true;
  if (!format.empty() && std::string_view("@=<>!").find(format.front()) != std::string_view::npos) {
    const char order = format.front();
    native = order == '@' || order == '=' ||
             (order == '<' ? std::endian::native == std::endian::little
                           : std::endian::native == std::endian::big);
    format.remove_prefix(1);
  }
  const auto not_ints = [&] {
    return py::type_error(fmt::format(
        "{}: an array of '{}' (struct format) items; tokens are integers{}", what, written,
        format.size() == 1 && std::string_view("efdg").find(format[0]) != std::string_view::npos
            ? " (convert with .astype(int) where the values are whole)"
            : ""));
  };
  if (format.size() != 1) throw not_ints();
  if (!native)
    throw py::type_error(
        fmt::format("{}: an array in the other byte order ('{}'); give it in "
                    "native order (e.g. numpy's .astype(int))",
                    what, written));
  const auto size = b.view.itemsize;
  switch (format[0]) {
    case 'b':
      return read_items<std::int8_t>(b, what);
    case 'B':
      return read_items<std::uint8_t>(b, what);
    case 'h':
      return read_items<std::int16_t>(b, what);
    case 'H':
      return read_items<std::uint16_t>(b, what);
    case 'i':
    case 'l':
    case 'q':
    case 'n':
      if (size == 4) return read_items<std::int32_t>(b, what);
      if (size == 8) return read_items<std::int64_t>(b, what);
      break;
    case 'I':
    case 'L':
    case 'Q':
    case 'N':
      if (size == 4) return read_items<std::uint32_t>(b, what);
      if (size == 8) return read_items<std::uint64_t>(b, what);
      break;
    default:
      break;
  }
  throw not_ints();
}

/// A list, tuple or other sequence: each item an int or has __index__.
token_list from_sequence(py::handle src, const char* what) {
  const py::object fast =
      py::reinterpret_steal<py::object>(PySequence_Fast(src.ptr(), "tokens: not a sequence"));
  if (!fast) throw py::error_already_set();
  const auto n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(fast.ptr()));
  PyObject** items = PySequence_Fast_ITEMS(fast.ptr());
  token_list out;
  out.ids.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    py::handle item(items[i]);
    py::object index;
    if (!PyLong_Check(item.ptr())) {
      index = py::reinterpret_steal<py::object>(PyNumber_Index(item.ptr()));
      if (!index) {
        PyErr_Clear();
        throw py::type_error(fmt::format("{}[{}] is a {} ({}), not an int", what, i,
                                         type_name(item), py::repr(item).cast<std::string>()));
      }
      item = index;
    }
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(item.ptr(), &overflow);
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    if (overflow != 0 || v < lowest_token || v > highest_token)
      beyond_a_token(what, i, py::str(item).cast<std::string>());
    out.ids[i] = static_cast<token_id>(v);
  }
  return out;
}

}  // namespace

token_list tokens_from(py::handle src, const char* what) {
  PyObject* p = src.ptr();
  if (PyUnicode_Check(p) || PyBytes_Check(p) || PyByteArray_Check(p))
    throw py::type_error(fmt::format(
        "{}: expected a sequence of ints or a 1-D integer array, got {}", what, type_name(src)));
  if (PyObject_CheckBuffer(p)) return from_buffer(src, what);
  if (py::hasattr(src, "__array__")) {  // a torch tensor, anything NumPy can read
    py::object array;
    try {
      array = py::module_::import("numpy").attr("asarray")(src);
    } catch (py::error_already_set& e) {  // a CUDA tensor: torch says to call .cpu()
      throw py::type_error(fmt::format("{}: cannot read this {} as an array: {}", what,
                                       type_name(src), py::str(e.value()).cast<std::string>()));
    }
    return from_buffer(array, what);
  }
  if (PySequence_Check(p) && !PyDict_Check(p)) return from_sequence(src, what);
  throw py::type_error(fmt::format("{}: expected a sequence of ints or a 1-D integer array, got {}",
                                   what, type_name(src)));
}

}  // namespace hc::python
