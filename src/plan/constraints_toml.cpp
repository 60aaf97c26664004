#include "plan/constraints_toml.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "hw/toml_reader.h"

namespace hetrec::inline plan {

void apply_constraints_file(const std::string& path, PlanConstraints& c) {
  const toml::table doc = parse_toml_file(path);
  TomlTableReader root(doc, path, "");
  if (!root.has("plan")) root.fail("plan", "a constraints file needs a [plan] table");
  TomlTableReader plan = root.table("plan");
  if (const auto v = plan.optional_integer("max_batch")) c.max_batch = *v;
  if (const auto v = plan.optional_integer("min_batch")) c.min_batch = *v;
  if (const auto v = plan.optional_number("headroom")) c.headroom = *v;
  if (const auto v = plan.optional_boolean("allow_host_tables")) c.allow_host_tables = *v;
  if (const auto v = plan.optional_number("lower_precision_gain")) c.lower_precision_gain = *v;
  if (plan.has("rows")) {
    const std::vector<std::string> names = plan.string_array("rows");
    c.rows.clear();
    for (const std::string& n : names) {
      DType t = DType::i32;
      try {
        t = parse_dtype(n, plan.key_path("rows"));
      } catch (const ConfigError&) {
        // named below with the file and line
      }
      if (t != DType::f32 && t != DType::f16 && t != DType::bf16)
        plan.fail("rows", "expected fp32, fp16 or bf16, got '" + n + "'");
      c.rows.push_back(t);
    }
  }
  if (plan.has("dense")) {
    const std::vector<std::string> names = plan.string_array("dense");
    c.dense.clear();
    for (const std::string& n : names) {
      try {
        c.dense.push_back(parse_dense_precision(n, plan.key_path("dense")));
      } catch (const ConfigError&) {
        plan.fail("dense", "expected fp32, tf32, bf16 or fp16, got '" + n + "'");
      }
    }
  }
  plan.finish();
  root.finish();
  try {
    validate_constraints(c);
  } catch (const ConfigError& e) {
    throw ConfigError(path + ": " + e.what());
  }
}

}  // namespace hetrec::plan::plan
