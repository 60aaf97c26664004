#pragma once
// The direct-port comparison: the recipe planned for hardware X run unchanged on
// hardware Y, against the recipe planned for Y. It measures what co-design buys: a
// recipe ported as is either does not fit Y (its memory model refuses it) or leaves Y's
// strengths unused.
#include <optional>
#include <string>

#include "plan/search.h"
#include "plan/workload.h"

namespace hetrec::inline plan {

struct PortComparison {
  std::string from;         // X: where the recipe was planned
  std::string to;           // Y: where it runs
  RecipeEvaluation ported;  // X's recipe evaluated on Y
  std::optional<RecipeEvaluation> native;  // the recipe planned for Y (none when nothing fits Y)
  // ported samples/s / native samples/s when both exist and the ported recipe fits, else 0.
  double ratio = 0.0;
};

// `from` and `to` are the plans for X and Y (from.best() must exist: ConfigError
// otherwise); `to_target` is Y.
PortComparison compare_direct_port(const Workload& workload, const PlanResult& from, const PlanResult& to,
                                   const PlanTarget& to_target, const PlanConstraints& constraints);

}  // namespace hetrec::plan::plan
