#pragma once
// The one-line description of a model's network that every backend prints.
#include <string>

#include "model/model_config.h"

namespace hetrec::inline model {

// "bottom MLP 13-512-256-128, 26 tables (204184588 rows, dim 128, fp32 rows), 3 cross
// layers of rank 512, top MLP 3456-1024-1024-512-256-1"
std::string describe_network(const ModelConfig& m);

}  // namespace hetrec::model::model
