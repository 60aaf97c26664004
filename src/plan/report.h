#pragma once
// The planner's text output: the chosen recipes of several accelerators side by side,
// one recipe's predicted phases, the ranked candidates of one plan, and the direct-port
// comparisons.
#include <cstddef>
#include <string>
#include <vector>

#include "plan/port_comparison.h"
#include "plan/search.h"
#include "plan/workload.h"

namespace hetrec::inline plan {

// One column per plan: batch, precisions, placement, device memory, predicted step and
// samples/s, whether the step model is calibrated, then every phase in ms. A plan with no
// fitting recipe shows "does not fit" ("-" for its values) and its refusal below the
// table. `targets` are in the order of `plans` (for the calibration state).
std::string format_plan_table(const Workload& workload, const std::vector<PlanResult>& plans,
                              const std::vector<const PlanTarget*>& targets);

// Phase, predicted ms and share of the step, then the step and samples/s.
std::string format_phase_table(const RecipeEvaluation& evaluation);

// The `count` best candidates of a plan, one line each.
std::string format_candidates(const Workload& workload, const PlanResult& plan, std::size_t count);

// One paragraph per comparison: the ported recipe, whether it fits on the target (and if
// not, why), its predicted samples/s against the native recipe's, and their ratio.
std::string format_port_comparisons(const Workload& workload, const std::vector<PortComparison>& comparisons);

// "1.36 M", "845 k", "512".
std::string format_rate(double per_second);

}  // namespace hetrec::plan::plan
