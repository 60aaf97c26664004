#include "python/py_config.h"

#include <sstream>
#include <toml++/toml.h>

#include "core/error.h"

namespace py = pybind11;

namespace hetrec::python {
namespace {

constexpr const char* kDictName = "<config dict>";

void insert_value(toml::table& table, const std::string& name, const py::handle& value, const std::string& key);

toml::array to_array(const py::handle& list, const std::string& key) {
  toml::array out;
  toml::table holder;
  std::size_t i = 0;
  for (const py::handle item : list) {
    const std::string element = key + "[" + std::to_string(i++) + "]";
    insert_value(holder, "v", item, element);
    out.push_back(*holder.get("v"));
    holder.clear();
  }
  return out;
}

toml::table to_table(const py::dict& dict, const std::string& prefix) {
  toml::table out;
  for (const auto& [k, v] : dict) {
    if (!py::isinstance<py::str>(k))
      throw ConfigError(std::string(kDictName) + ": config key '" + prefix + py::str(k).cast<std::string>() +
                        "': expected a string key, got " + py::str(py::type::of(k)).cast<std::string>());
    const std::string name = k.cast<std::string>();
    insert_value(out, name, v, prefix + name);
  }
  return out;
}

void insert_value(toml::table& table, const std::string& name, const py::handle& value, const std::string& key) {
  if (py::isinstance<py::bool_>(value)) {
    table.insert_or_assign(name, value.cast<bool>());
  } else if (py::isinstance<py::int_>(value)) {
    table.insert_or_assign(name, value.cast<int64_t>());
  } else if (py::isinstance<py::float_>(value)) {
    table.insert_or_assign(name, value.cast<double>());
  } else if (py::isinstance<py::str>(value)) {
    table.insert_or_assign(name, value.cast<std::string>());
  } else if (py::isinstance<py::dict>(value)) {
    table.insert_or_assign(name, to_table(value.cast<py::dict>(), key + "."));
  } else if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    table.insert_or_assign(name, to_array(value, key));
  } else {
    throw ConfigError(std::string(kDictName) + ": config key '" + key +
                      "': expected a bool, int, float, str, list or dict, got " +
                      py::str(py::type::of(value)).cast<std::string>());
  }
}

}  // namespace

std::string dict_to_toml(const py::dict& tables) {
  std::ostringstream text;
  text << to_table(tables, "");
  return text.str();
}

std::vector<std::string> override_strings(const py::object& overrides) {
  std::vector<std::string> out;
  if (overrides.is_none()) return out;
  if (py::isinstance<py::dict>(overrides)) {
    for (const auto& [k, v] : overrides.cast<py::dict>()) {
      const std::string key = py::str(k).cast<std::string>();
      // The value as TOML writes it ("v = <value>"), the form `--set key=value` reads.
      toml::table holder;
      insert_value(holder, "v", v, key);
      std::ostringstream text;
      text << holder;
      const std::string line = text.str();
      out.push_back(key + "=" + line.substr(line.find('=') + 2));
    }
    return out;
  }
  if (py::isinstance<py::str>(overrides))
    throw ConfigError("overrides: expected a list of \"key=value\" strings or a dict, got a single string");
  for (const py::handle item : overrides) {
    if (!py::isinstance<py::str>(item))
      throw ConfigError("overrides: expected \"key=value\" strings, got " + py::str(py::type::of(item)).cast<std::string>());
    out.push_back(item.cast<std::string>());
  }
  return out;
}

RunConfig load_config(const py::object& config, const py::object& overrides, const std::string& recipe) {
  const std::vector<std::string> sets = override_strings(overrides);
  if (py::isinstance<py::dict>(config)) {
    if (!recipe.empty()) throw ConfigError("recipe: applies to a config file; put a dict's [recipe] table in the dict");
    return parse_run_config(dict_to_toml(config.cast<py::dict>()), kDictName, sets);
  }
  const py::object fspath = py::module_::import("os").attr("fspath");
  py::object path;
  try {
    path = fspath(config);
  } catch (const py::error_already_set&) {
    throw ConfigError("config: expected a path (str or os.PathLike) or a dict, got " +
                      py::str(py::type::of(config)).cast<std::string>());
  }
  if (!py::isinstance<py::str>(path)) throw ConfigError("config: expected a path as text, got bytes");
  return load_run_config(path.cast<std::string>(), sets, recipe);
}

}  // namespace hetrec::python
