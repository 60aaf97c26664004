#pragma once
// The recipe as the TOML fragment `hetrec train --config model.toml --recipe plan.toml`
// applies: a [recipe] table with the keys train/config.cpp accepts (batch_size,
// row_dtype, dense_dtype, allow_tf32, and the informational hardware,
// predicted_step_ms, predicted_samples_per_s).
//
// A recipe with tables in host memory also writes host_tables = ["t0", ...]; the trainer
// does not read that key yet and rejects the file, rather than silently placing every
// table in HBM.
#include <string>

#include "model/model_config.h"
#include "plan/recipe.h"
#include "plan/step_model.h"

namespace hetrec {

std::string recipe_to_toml(const Recipe& recipe, const StepPrediction& prediction, const ModelConfig& model);

}  // namespace hetrec
