#pragma once
// Checked reads of fields of a results file's JSON (plan/e2e_record, plan/planner_record):
// a missing or mistyped key is a ConfigError naming where it was looked for.
#include <nlohmann/json.hpp>
#include <string>

#include "core/text_file.h"

#include "core/error.h"

namespace hetrec::inline plan::json_fields {

inline const nlohmann::json& member(const nlohmann::json& object, const std::string& key, const std::string& where) {
  if (!object.is_object() || !object.contains(key)) throw ConfigError(where + ": missing key '" + key + "'");
  return object.at(key);
}

inline std::string text(const nlohmann::json& object, const std::string& key, const std::string& where) {
  const nlohmann::json& v = member(object, key, where);
  if (!v.is_string()) throw ConfigError(where + ": key '" + key + "' must be a string");
  return v.get<std::string>();
}

inline double number(const nlohmann::json& object, const std::string& key, const std::string& where) {
  const nlohmann::json& v = member(object, key, where);
  if (!v.is_number()) throw ConfigError(where + ": key '" + key + "' must be a number");
  return v.get<double>();
}

// A results file's JSON, whose "benchmark" key must be `benchmark` ("e2e", "planner").
// IoError when it cannot be read; ConfigError naming the file otherwise.
inline nlohmann::json read_results_file(const std::string& path, const std::string& benchmark) {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(read_text_file(path));
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(benchmark + " results file '" + path + "': invalid JSON: " + e.what());
  }
  const std::string kind = text(root, "benchmark", path);
  if (kind != benchmark)
    throw ConfigError(path + ": key 'benchmark' is '" + kind + "', expected '" + benchmark + "'");
  return root;
}

}  // namespace hetrec::plan::json_fields
