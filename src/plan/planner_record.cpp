#include "plan/planner_record.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "plan/json_fields.h"
#include "plan/step_model.h"

namespace hetrec::inline plan {
namespace {

using nlohmann::json;

using json_fields::member;
using json_fields::number;
using json_fields::text;

}  // namespace

PlannerRecord read_planner_record(const std::string& path) {
  const json root = json_fields::read_results_file(path, "planner");
  PlannerRecord r;
  r.path = path;
  r.gpu = text(root, "gpu", path);
  r.date = text(root, "date", path);
  // Copies, not references: member()'s key and path arguments here are temporaries.
  const json recipes = member(member(root, "metrics", path), "recipes", path + ": metrics");
  if (!recipes.is_array()) throw ConfigError(path + ": metrics.recipes: expected an array");
  const std::string file = path.substr(path.find_last_of('/') + 1);
  for (std::size_t i = 0; i < recipes.size(); ++i) {
    const json& e = recipes[i];
    const std::string where = path + ": metrics.recipes[" + std::to_string(i) + "]";
    if (!e.contains("measured") || e.contains("same_run_as")) continue;  // not run, or a repeat
    PlannerRun run;
    run.label = file + ": " + text(e, "name", where);
    run.config = text(e, "config", where);
    const json recipe = member(e, "recipe", where);
    const double batch = number(recipe, "batch_size", where + ".recipe");
    if (!(batch >= 1.0) || batch != std::floor(batch)) throw ConfigError(where + ".recipe.batch_size: expected a positive integer");
    run.batch = static_cast<int64_t>(batch);
    run.dense = parse_dense_precision(text(recipe, "dense", where + ".recipe"), where + ".recipe.dense");
    run.row_dtype = parse_dtype(text(recipe, "row_dtype", where + ".recipe"), where + ".recipe.row_dtype");
    const json host = member(recipe, "host_tables", where + ".recipe");
    if (!host.is_array()) throw ConfigError(where + ".recipe.host_tables: expected an array of table names");
    for (const json& t : host) {
      if (!t.is_string()) throw ConfigError(where + ".recipe.host_tables: expected an array of table names");
      run.host_tables.push_back(t.get<std::string>());
    }
    if (recipe.contains("cross_residual")) {
      const std::string stream = text(recipe, "cross_residual", where + ".recipe");
      run.cross_residual_16bit = parse_cross_residual(stream);
      if (!run.cross_residual_16bit)
        throw ConfigError(where + ".recipe.cross_residual: expected \"fp32\" or \"16bit\", got \"" + stream + "\"");
    }
    if (recipe.contains("unaligned_gemms")) {
      const std::string g = text(recipe, "unaligned_gemms", where + ".recipe");
      if (g != "tf32" && g != "fp32")
        throw ConfigError(where + ".recipe.unaligned_gemms: expected \"tf32\" or \"fp32\", got \"" + g + "\"");
      run.unaligned_tf32 = g == "tf32";
    }
    run.step_ms = number(member(e, "measured", where), "step_ms_median", where + ".measured");
    if (e.contains("batch_copied_ahead")) {
      if (!e.at("batch_copied_ahead").is_boolean()) throw ConfigError(where + ".batch_copied_ahead: expected true or false");
      run.batch_copied_ahead = e.at("batch_copied_ahead").get<bool>();
    }
    if (!(run.step_ms > 0.0)) throw ConfigError(where + ".measured.step_ms_median: expected a positive time");
    const json measured = member(e, "measured", where);
    if (measured.contains("device_used_bytes")) {
      run.device_used_bytes = number(measured, "device_used_bytes", where + ".measured");
      if (!(run.device_used_bytes > 0.0))
        throw ConfigError(where + ".measured.device_used_bytes: expected a positive byte count");
    }
    r.runs.push_back(std::move(run));
  }
  return r;
}

Recipe planner_recipe(const PlannerRun& run, const ModelConfig& model, const std::string& hardware) {
  Recipe recipe = recipe_of_model(model, run.batch, hardware);
  recipe.dense = run.dense;
  recipe.row_dtype = run.row_dtype;
  if (run.cross_residual_16bit) recipe.cross_residual_16bit = *run.cross_residual_16bit;
  recipe.unaligned_tf32 = run.unaligned_tf32;
  for (const std::string& name : run.host_tables) {
    bool found = false;
    for (std::size_t t = 0; t < model.tables.size(); ++t)
      if (model.tables[t].name == name) {
        recipe.placement[t] = TablePlacement::host;
        found = true;
      }
    if (!found) throw ConfigError(run.label + ": host table '" + name + "' is not a table of " + run.config);
  }
  return recipe;
}

StepMeasurement planner_measurement(const PlannerRun& run, const ModelConfig& model, const OptimConfig& optim,
                                    const IdDistribution& ids, const GemmSelector& gemm) {
  const Recipe recipe = planner_recipe(run, model, gemm.hardware().name);
  StepMeasurement m;
  m.label = run.label;
  m.work = step_work(model, optim, recipe, gemm, ids);
  m.work.upload_ahead = run.batch_copied_ahead;
  m.step_ms = run.step_ms;
  return m;
}

}  // namespace hetrec::plan::plan
