#pragma once
// The recipe as the TOML fragment `hetrec train --config model.toml --recipe plan.toml`
// applies: a [recipe] table with the keys train/config.cpp accepts (batch_size,
// row_dtype, dense_dtype, allow_tf32, host_tables when any table is in host memory, and
// the informational hardware, predicted_step_ms, predicted_samples_per_s).
//
// A recipe for several GPUs adds `gpus = N` (informational: the job's size is mpirun's
// -np) and the sharding of every table, in the format train/config.cpp reads:
//   [recipe.sharding]
//   default = "table_wise"
//   [recipe.sharding.tables.t0]
//   type = "table_wise"
//   rank = 1
// so that `mpirun -np N hetrec train --config model.toml --recipe plan.toml` runs it.
#include <string>

#include "model/model_config.h"
#include "plan/recipe.h"
#include "plan/step_model.h"

namespace hetrec::inline plan {

std::string recipe_to_toml(const Recipe& recipe, const StepPrediction& prediction, const ModelConfig& model);

}  // namespace hetrec::plan::plan
