#pragma once
// Replays a recorded planner benchmark (bench/results/planner-*.json) with today's step
// model: for each config, the measured recipe the model ranks first (highest predicted
// samples/s, the search's objective) against the fastest measured one. The ratio of their
// measured samples/s is the planner's "chosen vs best" over what was measured; a model
// change that ranks a slower recipe first lowers it.
#include <string>
#include <vector>

#include "plan/planner_record.h"
#include "plan/step_model_params.h"

namespace hetrec::inline plan {

struct MeasuredRecipe {
  std::string label;         // the run's label
  std::string config;        // the config it trained
  int64_t batch = 0;
  StepMeasurement measurement;  // its work and measured step
};

struct ChosenVsBest {
  std::string config;
  std::string chosen;  // label of the run the model ranks first
  std::string best;    // label of the fastest measured run
  double ratio = 0.0;  // measured samples/s of chosen / of best (1: the model picks the fastest)
  double chosen_predicted_samples_per_s = 0.0;
};

// One entry per config, in the order the configs first appear. Throws ConfigError when a
// config has no measured run.
std::vector<ChosenVsBest> replay_chosen_vs_best(const std::vector<MeasuredRecipe>& runs, const StepModelParams& params);

}  // namespace hetrec::plan::plan
