#include "plan/recipe.h"

#include <string>

#include "core/error.h"

namespace hetrec {

int Recipe::host_tables() const {
  int n = 0;
  for (TablePlacement p : placement) n += p == TablePlacement::host;
  return n;
}

std::string_view dense_precision_name(DensePrecision p) {
  switch (p) {
    case DensePrecision::fp32: return "fp32";
    case DensePrecision::tf32: return "tf32";
    case DensePrecision::bf16: return "bf16";
    case DensePrecision::fp16: return "fp16";
  }
  return "?";
}

DensePrecision parse_dense_precision(std::string_view name, std::string_view key) {
  for (DensePrecision p : kAllDensePrecisions)
    if (dense_precision_name(p) == name) return p;
  throw ConfigError(std::string(key) + ": expected a dense precision fp32, tf32, bf16 or fp16, got '" + std::string(name) +
                    "'");
}

std::string_view placement_name(TablePlacement p) { return p == TablePlacement::hbm ? "hbm" : "host"; }

Recipe recipe_of_model(const ModelConfig& model, int64_t batch, const std::string& hardware) {
  Recipe r;
  r.hardware = hardware;
  r.batch = batch;
  r.dense = model.dense_dtype == DType::bf16 ? DensePrecision::bf16
            : model.dense_dtype == DType::f16 ? DensePrecision::fp16
            : model.allow_tf32                ? DensePrecision::tf32
                                              : DensePrecision::fp32;
  r.row_dtype = model.row_dtype;
  r.placement.assign(model.tables.size(), TablePlacement::hbm);
  for (std::size_t t = 0; t < model.tables.size(); ++t)
    for (const std::string& name : model.host_tables)
      if (model.tables[t].name == name) r.placement[t] = TablePlacement::host;
  return r;
}

void validate_recipe(const Recipe& recipe, const ModelConfig& model) {
  if (recipe.batch < 1)
    throw ConfigError("recipe for '" + recipe.hardware + "': batch must be >= 1, got " + std::to_string(recipe.batch));
  if (recipe.row_dtype != DType::f32 && recipe.row_dtype != DType::f16 && recipe.row_dtype != DType::bf16)
    throw ConfigError("recipe for '" + recipe.hardware + "': row dtype must be fp32, fp16 or bf16, got " +
                      std::string(dtype_name(recipe.row_dtype)));
  if (recipe.placement.size() != model.tables.size())
    throw ConfigError("recipe for '" + recipe.hardware + "': " + std::to_string(recipe.placement.size()) +
                      " table placements for a model of " + std::to_string(model.tables.size()) + " tables");
}

std::string describe_recipe(const Recipe& recipe, const ModelConfig& model) {
  std::string s = "batch " + std::to_string(recipe.batch) + ", " + std::string(dense_precision_name(recipe.dense)) +
                  " GEMMs, " + std::string(dtype_name(recipe.row_dtype)) + " rows, ";
  const int host = recipe.host_tables();
  if (host == 0) return s + "all tables in HBM";
  s += std::to_string(host) + (host == 1 ? " table" : " tables") + " in host memory (";
  bool first = true;
  for (std::size_t t = 0; t < recipe.placement.size() && t < model.tables.size(); ++t) {
    if (recipe.placement[t] != TablePlacement::host) continue;
    s += (first ? "" : ", ") + model.tables[t].name;
    first = false;
  }
  return s + ")";
}

}  // namespace hetrec
