#pragma once
// Sharding helpers shared by the data-parallel tests.
#include "dist/sharding.h"

namespace hetrec::testing {

// `spec` for a job of one rank, the reference the bf16-exchange tests compare N ranks
// with: row blocks given for N ranks do not apply to one (its block is the whole table).
inline dist::ShardingSpec one_rank_spec(dist::ShardingSpec spec) {
  for (auto& [name, choice] : spec.tables) choice.row_bounds.clear();
  return spec;
}

}  // namespace hetrec::testing
