#pragma once
// Co-design of the model: with `hetrec plan --revise` the planner proposes structural
// changes that spend a resource the target has in excess, each with its predicted cost
// (samples/s given up against the model before it) and the reason:
//   - more rows for hashed tables (fewer collisions of the raw ids) while the best recipe
//     still fits the memory the constraints leave;
//   - a larger DCN rank while the cross net's extra arithmetic costs little.
// Each proposal is planned in full (plan_recipes) on the model the previous one left.
#include <cstdint>
#include <string>
#include <vector>

#include "plan/search.h"

namespace hetrec::inline plan {

// Samples/s a proposal may give up against the model before it. Planner's choice: a
// revision that buys model quality with a tenth of the throughput is still worth proposing;
// bench port measures what it buys.
inline constexpr double kDefaultMaxRevisionCost = 0.10;

struct RevisionOptions {
  // The raw id space of the data: every table's raw ids are raw_ids_per_row x its rows,
  // hashed into them (data.synthetic.raw_ids_per_row); 1: ids are rows (nothing to gain
  // from more rows). Row growth keeps the raw space: the factor divides it.
  int64_t raw_ids_per_row = 1;
  double max_cost = kDefaultMaxRevisionCost;
};

struct ModelRevision {
  std::string change;  // what changes, e.g. "every table: rows x4 (204.2 M -> 816.7 M)"
  std::string reason;
  ModelConfig model;   // the model after this revision (and the ones before it)
  int64_t raw_ids_per_row = 1;  // the data's raw ids per row of the revised tables
  RecipeEvaluation before, after;  // the best recipes of the model before and after
  double cost = 0.0;   // 1 - after samples/s / before samples/s
};

// Throws ConfigError when the model has no recipe within the constraints.
std::vector<ModelRevision> propose_revisions(const Workload& workload, const PlanTarget& target,
                                             const PlanConstraints& constraints, const RevisionOptions& options);

}  // namespace hetrec::plan::plan
