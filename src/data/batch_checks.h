#pragma once
// Checks of a batch's bags against the tables, for backends that read through the
// offsets and ids without checking every access (GPU kernels, cut shard bags).
#include <vector>

#include "data/batch.h"
#include "data/feature_spec.h"

namespace hetrec {

// Throws DataError unless `batch` has one bag per table (num_tables) and sample and its
// offsets start at 0, never decrease and end at the id count.
void check_bag_offsets(const Batch& batch, int num_tables);

// check_bag_offsets, then DataError naming the table, the sample and the id for the first
// id outside [0, rows) of its table.
void check_bag_ids(const Batch& batch, const std::vector<TableConfig>& tables);

}  // namespace hetrec
