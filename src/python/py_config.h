#pragma once
// A run configuration from Python: a config file's path or a dict of the same tables
// ({"model": {...}, "train": {...}}), and overrides as "key=value" strings or a dict
// {"train.steps": 100}. A dict is written as TOML text and read by the same validation as a
// file (train/config.h), so an unknown key or a bad value gives the same error, naming the
// key, with "<config dict>" in place of the file name.
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "train/config.h"

namespace hetrec::python {

// The TOML text of a dict of tables; ConfigError naming the key of a value TOML cannot hold.
std::string dict_to_toml(const pybind11::dict& tables);

// `overrides`: None, a list of "key=value" strings, or a dict of key -> value.
std::vector<std::string> override_strings(const pybind11::object& overrides);

// `config`: a path (str or os.PathLike) or a dict.
RunConfig load_config(const pybind11::object& config, const pybind11::object& overrides, const std::string& recipe);

}  // namespace hetrec::python
