#include "plan/planner_replay.h"

#include <map>

#include "core/error.h"
#include "plan/step_model.h"

namespace hetrec::inline plan {

std::vector<ChosenVsBest> replay_chosen_vs_best(const std::vector<MeasuredRecipe>& runs, const StepModelParams& params) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const MeasuredRecipe*>> by_config;
  for (const MeasuredRecipe& r : runs) {
    if (!(r.measurement.step_ms > 0.0) || r.batch < 1)
      throw ConfigError("planner replay: run '" + r.label + "' has no measured step");
    if (by_config.find(r.config) == by_config.end()) order.push_back(r.config);
    by_config[r.config].push_back(&r);
  }
  std::vector<ChosenVsBest> out;
  for (const std::string& config : order) {
    const MeasuredRecipe* chosen = nullptr;
    const MeasuredRecipe* best = nullptr;
    double chosen_predicted = 0.0, best_measured = 0.0;
    for (const MeasuredRecipe* r : by_config.at(config)) {
      const double predicted = predict_step(r->measurement.work, params).samples_per_s;
      const double measured = 1000.0 * static_cast<double>(r->batch) / r->measurement.step_ms;
      if (!chosen || predicted > chosen_predicted) chosen = r, chosen_predicted = predicted;
      if (!best || measured > best_measured) best = r, best_measured = measured;
    }
    const double chosen_measured = 1000.0 * static_cast<double>(chosen->batch) / chosen->measurement.step_ms;
    out.push_back(ChosenVsBest{config, chosen->label, best->label, chosen_measured / best_measured, chosen_predicted});
  }
  return out;
}

}  // namespace hetrec::plan::plan
