#include "plan/port_comparison.h"

namespace hetrec::inline plan {

PortComparison compare_direct_port(const Workload& workload, const PlanResult& from, const PlanResult& to,
                                   const PlanTarget& to_target, const PlanConstraints& constraints) {
  PortComparison c;
  c.from = from.hardware;
  c.to = to.hardware;
  Recipe recipe = from.best().recipe;
  recipe.hardware = to_target.hw().name;
  c.ported = evaluate_recipe(workload, recipe, to_target, constraints);
  if (!to.ranked.empty()) c.native = to.best();
  if (c.ported.fits && c.native) c.ratio = c.ported.step.samples_per_s / c.native->step.samples_per_s;
  return c;
}

}  // namespace hetrec::plan::plan
