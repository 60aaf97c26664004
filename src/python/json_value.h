#pragma once
// A JSON value (a metrics record, a summary) as the Python object json.loads would give.
#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>

namespace hetrec::python {

pybind11::object to_python(const nlohmann::json& value);

}  // namespace hetrec::python
