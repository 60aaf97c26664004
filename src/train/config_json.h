#pragma once
// The resolved run configuration as JSON: every key of every section with the value the
// run uses (the file, then --set, then the recipe, with defaults filled in), spelt as the
// TOML keys are. The metrics file's run header carries it (train/run_header.h).
#include <nlohmann/json.hpp>

#include "train/config.h"

namespace hetrec::inline train {

nlohmann::json resolved_config_json(const RunConfig& cfg);

}  // namespace hetrec::train::train
