#pragma once
// One mini-batch in the layout every backend consumes (CPU loops and GPU kernels alike):
// dense features row-major, labels, and all tables' bags in one CSR structure ordered
// table-major, the layout of a table-batched embedding lookup.
#include <cstdint>
#include <vector>

namespace hetrec::inline data {

struct Batch {
  int64_t size = 0;        // samples B
  int num_dense = 0;       // dense features per sample
  int num_tables = 0;      // sparse features (one embedding table each)
  int64_t first_sample = 0;  // index of sample 0 in its source (for logging and resume)

  std::vector<float> dense;     // B x num_dense, already transformed (e.g. log(x+1))
  std::vector<float> labels;    // B values in {0, 1}
  // Bag of table t, sample b: ids[offsets[t*B + b] .. offsets[t*B + b + 1]).
  // offsets has num_tables*B + 1 entries, offsets[0] == 0, non-decreasing.
  std::vector<int32_t> offsets;
  std::vector<int32_t> ids;     // row ids local to their table, in [0, rows_t)

  int64_t bag_begin(int t, int64_t b) const { return offsets[static_cast<std::size_t>(t * size + b)]; }
  int64_t bag_end(int t, int64_t b) const { return offsets[static_cast<std::size_t>(t * size + b + 1)]; }
  // Resizes the buffers for B samples (ids left empty: filled by the producer).
  void reset(int64_t batch_size, int dense_features, int tables) {
    size = batch_size;
    num_dense = dense_features;
    num_tables = tables;
    dense.assign(static_cast<std::size_t>(batch_size * dense_features), 0.0f);
    labels.assign(static_cast<std::size_t>(batch_size), 0.0f);
    offsets.assign(static_cast<std::size_t>(tables * batch_size + 1), 0);
    ids.clear();
  }
};

}  // namespace hetrec::data::data
