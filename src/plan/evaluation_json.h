#pragma once
// One recipe's evaluation as JSON (`hetrec plan --evaluate`): the recipe, whether it fits,
// the predicted step per phase, samples/s and the memory consumers, so that a measured
// run can be compared with the prediction field by field. With several GPUs also the
// recipe's sharding and, per rank, its predicted step and memory (consumer by consumer).
#include <nlohmann/json.hpp>

#include "plan/search.h"

namespace hetrec::inline plan {

nlohmann::json evaluation_to_json(const RecipeEvaluation& evaluation, const ModelConfig& model, double headroom);

}  // namespace hetrec::plan::plan
