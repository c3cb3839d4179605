#include "errors.h"

#include <exception>

#include "core/error.h"

namespace ferrite::python {
namespace py = pybind11;
namespace {

// Owned by the module for the life of the interpreter.
PyObject* g_base = nullptr;
PyObject* g_invalid = nullptr;
PyObject* g_format = nullptr;
PyObject* g_model = nullptr;
PyObject* g_io = nullptr;
PyObject* g_runtime = nullptr;

PyObject* new_error(py::module_& m, const char* name, PyObject* builtin) {
  const std::string qualified = std::string("ferrite._ferrite.") + name;
  PyObject* bases = builtin ? PyTuple_Pack(2, g_base, builtin) : nullptr;
  PyObject* type = PyErr_NewException(qualified.c_str(), bases ? bases : PyExc_Exception, nullptr);
  Py_XDECREF(bases);
  if (!type) throw py::error_already_set();
  m.add_object(name, py::handle(type));
  return type;
}

}  // namespace

void register_errors(py::module_& m) {
  g_base = new_error(m, "FerriteError", nullptr);
  g_invalid = new_error(m, "InvalidArgumentError", PyExc_ValueError);
  g_format = new_error(m, "FormatError", PyExc_ValueError);
  g_model = new_error(m, "ModelError", PyExc_ValueError);
  g_io = new_error(m, "IoError", PyExc_OSError);
  g_runtime = new_error(m, "EngineError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const FormatError& e) {
      PyErr_SetString(g_format, e.what());
    } catch (const ModelError& e) {
      PyErr_SetString(g_model, e.what());
    } catch (const InvalidArgument& e) {
      PyErr_SetString(g_invalid, e.what());
    } catch (const IoError& e) {
      PyErr_SetString(g_io, e.what());
    } catch (const Error& e) {
      PyErr_SetString(g_runtime, e.what());
    }
  });
}

}  // namespace ferrite::python
