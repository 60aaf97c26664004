#pragma once
// Checks of a batch against the model before a step: its shape (every backend), and its
// bags against the tables, for backends that read through the offsets and ids without
// checking every access (GPU kernels, cut shard bags).
#include <vector>

#include "data/batch.h"
#include "data/feature_spec.h"

namespace hetrec::inline data {

// Throws DataError naming the batch's first sample unless it has at least one sample,
// `num_dense` dense features and `num_tables` sparse ones (the model's), as many dense
// values as that makes and, with `need_labels`, a label per sample.
void check_batch_shape(const Batch& batch, int num_dense, int num_tables, bool need_labels);

// Throws DataError unless `batch` has one bag per table (num_tables) and sample and its
// offsets start at 0, never decrease and end at the id count.
void check_bag_offsets(const Batch& batch, int num_tables);

// check_bag_offsets, then DataError naming the table, the sample and the id for the first
// id outside [0, rows) of its table.
void check_bag_ids(const Batch& batch, const std::vector<TableConfig>& tables);

}  // namespace hetrec::data::data
