#pragma once
// The user's quality constraints read from a TOML file (`hetrec plan --constraints F`, and
// `hetrec bench port`): a [plan] table with any of
//   max_batch = 131072, min_batch = 1024, rows = ["fp32", "bf16"], dense = ["fp32", "tf32"],
//   headroom = 0.1, allow_host_tables = false, lower_precision_gain = 0.0
// Keys left out keep the values `c` already holds; an unknown key, a wrong type or an
// unknown precision is a ConfigError naming the file, the line and the key.
#include <string>

#include "plan/search.h"

namespace hetrec::inline plan {

void apply_constraints_file(const std::string& path, PlanConstraints& c);

}  // namespace hetrec::plan::plan
