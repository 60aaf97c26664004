#include "tune/variant_space.h"

#include "core/error.h"

namespace hetrec::tune {

std::vector<ParameterSet> enumerate(const VariantSpace& space) {
  std::vector<ParameterSet> out{ParameterSet{}};
  for (const TunableParameter& p : space.parameters) {
    if (p.values.empty()) throw InternalError("variant space " + space.kernel + ": parameter " + p.name + " has no values");
    std::vector<ParameterSet> next;
    for (const ParameterSet& partial : out)
      for (int v : p.values) {
        ParameterSet s = partial;
        s[p.name] = v;
        next.push_back(std::move(s));
      }
    out = std::move(next);
  }
  return out;
}

std::string describe(const ParameterSet& params) {
  std::string s;
  for (const auto& [name, value] : params) s += (s.empty() ? "" : " ") + name + "=" + std::to_string(value);
  return s;
}

nlohmann::json to_json(const ParameterSet& params) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : params) j[name] = value;
  return j;
}

ParameterSet parameters_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw ConfigError(where + ": expected an object of integer parameters");
  ParameterSet p;
  for (const auto& [name, value] : j.items()) {
    if (!value.is_number_integer())
      throw ConfigError(where + ": parameter '" + name + "' must be an integer, got " + value.dump());
    p[name] = value.get<int>();
  }
  return p;
}

}  // namespace hetrec::tune
