#pragma once
// Internal to hybridcache._native: a command's tokens as Python gives them.
//
// Accepted: a list, tuple or range of ints (or of objects with __index__: NumPy or torch
// integer scalars); a 1-D integer array read through the buffer protocol (NumPy,
// array.array, memoryview), without an object per token; anything else with __array__ (a
// CPU torch tensor), read as NumPy reads it. Every token must fit a token id (int32).
// Refused with an error that names what is wrong (TypeError for the kind, ValueError for
// a value, with its position): str and bytes, a float, a 2-D array, a CUDA tensor, a token
// beyond int32. Read back as a list of ints.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <vector>

#include "actors/common/ids.hpp"

namespace hc::python {

/// A command's tokens (cmd.Create / Append / Lookup), converted as the header says.
struct token_list {
  std::vector<token_id> ids;
};

/// `src` as tokens; throws pybind11::type_error / value_error naming the argument `what`.
token_list tokens_from(pybind11::handle src, const char* what = "tokens");

}  // namespace hc::python

namespace pybind11::detail {

template <>
struct type_caster<hc::python::token_list> {
  PYBIND11_TYPE_CASTER(hc::python::token_list, const_name("Sequence[int]"));

  bool load(handle src, bool /*convert*/) {
    value = hc::python::tokens_from(src);
    return true;
  }
  static handle cast(const hc::python::token_list& t, return_value_policy policy, handle parent) {
    return make_caster<std::vector<hc::token_id>>::cast(t.ids, policy, parent);
  }
};

}  // namespace pybind11::detail
