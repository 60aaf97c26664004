#pragma once
// The run configuration: a TOML file with [model], [optim], [data], [train] and an
// optional [recipe] (the planner's output), plus `--set key=value` overrides. Every key
// is validated: unknown keys, wrong types and out-of-range values are ConfigErrors that
// name the file and the key and say what was expected.
#include <string>
#include <vector>

#include "data/data_config.h"
#include "dist/sharding.h"
#include "model/model_config.h"
#include "train/train_config.h"

namespace hetrec::inline train {

struct RunConfig {
  ModelConfig model;
  OptimConfig optim;
  DataConfig data;
  TrainConfig train;
  // How tables are placed on the ranks of a distributed job ([recipe.sharding]; the
  // default, table_wise round-robin, when absent). Unused by a single process.
  dist::ShardingSpec sharding;
  // The GPUs a planned recipe was made for (recipe.gpus; 0 when the recipe does not say).
  // Informational: the job's size is the launcher's (mpirun -np).
  int recipe_gpus = 0;
  std::string source;  // the file it came from (for messages)
};

// `overrides` are "dotted.key=value" strings; the value is read as a TOML value
// (numbers, booleans, "strings", [arrays]) and a bare word is taken as a string.
// `recipe_path`, when not empty, is a TOML file whose [recipe] table is applied on top.
RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides = {},
                          const std::string& recipe_path = "");

// Same from TOML text (tests; `name` stands for the file in messages).
RunConfig parse_run_config(const std::string& toml_text, const std::string& name,
                           const std::vector<std::string>& overrides = {}, const std::string& recipe_text = "",
                           const std::string& recipe_name = "recipe");

}  // namespace hetrec::train::train
