#pragma once
// Measured recipes of a planner results file (bench/results/planner-*.json, written by
// bench/plan_recipes.py): each `hetrec train --recipe` run's median step time with the
// recipe it ran, read back as step-model measurements so that `hetrec plan` calibrates on
// them as on the e2e records.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "gemm_perf/gemm_selector.h"
#include "plan/calibration.h"
#include "plan/id_distribution.h"
#include "plan/recipe.h"

namespace hetrec::inline plan {

struct PlannerRun {
  std::string label;   // "<file>: <recipe name>"
  std::string config;  // the config file the run trained
  int64_t batch = 0;
  DensePrecision dense = DensePrecision::fp32;
  DType row_dtype = DType::f32;
  std::vector<std::string> host_tables;
  // The cross net's residual stream (recipe.cross_residual, "fp32" or "16bit"); records
  // without the field ran the config's.
  std::optional<bool> cross_residual_16bit;
  // The unaligned layers' GEMMs under 16-bit compute (recipe.unaligned_gemms, "tf32" or
  // "fp32"); records without the field ran them in fp32.
  bool unaligned_tf32 = false;
  double step_ms = 0.0;  // measured median train_step
  // cudaMemGetInfo's used bytes at the end of the run (measured.device_used_bytes); 0 when
  // the record does not have it.
  double device_used_bytes = 0.0;
  // Whether the run copied announced batches ahead (batch_copied_ahead; runs recorded
  // before the engine did uploaded before each step).
  bool batch_copied_ahead = false;
};

struct PlannerRecord {
  std::string path;
  std::string gpu;  // as the driver reports it
  std::string date;
  std::vector<PlannerRun> runs;  // measured recipes, each run once (repeats of a run are left out)
};

// Throws IoError when the file cannot be read, ConfigError naming the file and key when it
// is not a planner record (benchmark != "planner", missing or mistyped fields).
PlannerRecord read_planner_record(const std::string& path);

// The recipe the run trained: `model`'s tables with the run's batch, precisions and host
// tables, on `hardware`. Throws ConfigError naming the run for a host table the model does
// not have.
Recipe planner_recipe(const PlannerRun& run, const ModelConfig& model, const std::string& hardware);

// The run as a measurement of `model` / `optim` (its config) on the selector's hardware,
// with the config's id law `ids`. Throws ConfigError naming the run for a host table the
// model does not have.
StepMeasurement planner_measurement(const PlannerRun& run, const ModelConfig& model, const OptimConfig& optim,
                                    const IdDistribution& ids, const GemmSelector& gemm);

}  // namespace hetrec::plan::plan
