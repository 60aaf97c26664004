// The Python module `hetrec`: the engine's errors as Python exceptions, then its parts.
#include <pybind11/pybind11.h>

#include "core/error.h"
#include "python/bindings.h"

namespace py = pybind11;

PYBIND11_MODULE(hetrec, m) {
  m.doc() = "hetrec: train, evaluate and plan DLRM / DLRM-DCNv2 models (docs/python.md)";
  m.attr("__version__") = HETREC_VERSION;
  // Every engine error is a hetrec.Error; bad input is also a ValueError (its message names
  // the key, file or array and what was expected), failed I/O an OSError, a diverged run an
  // ArithmeticError. Translators registered later are tried first: the base class goes first.
  const py::object error = py::register_exception<hetrec::Error>(m, "Error", PyExc_Exception);
  const auto bases = [&](PyObject* builtin) { return py::make_tuple(error, py::handle(builtin)); };
  py::register_exception<hetrec::ConfigError>(m, "ConfigError", bases(PyExc_ValueError));
  py::register_exception<hetrec::DataError>(m, "DataError", bases(PyExc_ValueError));
  py::register_exception<hetrec::CheckpointError>(m, "CheckpointError", bases(PyExc_ValueError));
  py::register_exception<hetrec::IoError>(m, "IoError", bases(PyExc_OSError));
  py::register_exception<hetrec::NumericError>(m, "NumericError", bases(PyExc_ArithmeticError));
  hetrec::python::bind_session(m);
  hetrec::python::bind_planning(m);
}
