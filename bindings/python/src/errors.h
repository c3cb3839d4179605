// ferrite's C++ errors as Python exceptions. Every class derives from
// ferrite.FerriteError and from the built-in a caller would expect:
//   InvalidArgument, FormatError, ModelError  -> ValueError
//   IoError                                   -> OSError
//   any other ferrite::Error                  -> RuntimeError
// The message is the engine's.
#pragma once

#include <pybind11/pybind11.h>

namespace ferrite::python {

void register_errors(pybind11::module_& m);

}  // namespace ferrite::python
