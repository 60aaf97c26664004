#pragma once
// A kernel's tunable parameters as data: each parameter is a name with the values the
// tuner may give it, and a variant is one value per parameter. The kernel source is one
// template; a variant instantiates it (tunable/embedding_forward/embedding_forward_tuned.h).
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hetrec::tune {

struct TunableParameter {
  std::string name;         // "vec_bytes"
  std::vector<int> values;  // the values to try
  std::string meaning;      // one line for docs and the progress display
};

struct VariantSpace {
  std::string kernel;  // "embedding_bag_forward"
  std::vector<TunableParameter> parameters;
};

using ParameterSet = std::map<std::string, int>;

// Every combination of the parameters' values, in a fixed order (the first parameter
// varies slowest).
std::vector<ParameterSet> enumerate(const VariantSpace& space);

// "block_threads=256 ids_in_flight=4 lanes=32 vec_bytes=16"
std::string describe(const ParameterSet& params);

nlohmann::json to_json(const ParameterSet& params);
// Throws ConfigError naming `where` when the JSON is not an object of integers.
ParameterSet parameters_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace hetrec::tune
