#pragma once
// The parts of the Python module `hetrec`, each registering its names on the module
// (module.cpp puts them together; docs/python.md describes the API).
#include <pybind11/pybind11.h>

namespace hetrec::python {

void bind_session(pybind11::module_& m);   // Session: config, train, evaluate, predict
void bind_planning(pybind11::module_& m);  // hardware_list, plan, gemm_select

}  // namespace hetrec::python
