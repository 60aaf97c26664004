#pragma once
// The small DLRM / DLRM-DCNv2 and the random batches the GPU model tests train: five
// tables of 7 to 20000 rows (one mean-pooled), bags of 0 to 3 skewed ids (rows repeat
// within a batch), random dense features and labels.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/rng.h"
#include "data/batch.h"
#include "model/model_config.h"

namespace hetrec {

inline ModelConfig small_model(Arch arch, DType row_dtype, int cross_rank = 0) {
  ModelConfig m;
  m.arch = arch;
  m.num_dense = 13;
  m.embedding_dim = 16;
  const int64_t rows[] = {1000, 50, 3000, 7, 20000};
  for (int t = 0; t < 5; ++t) {
    TableConfig c;
    c.name = "C" + std::to_string(t + 1);
    c.rows = rows[t];
    c.hotness = 2;
    c.pooling = t == 3 ? Pooling::mean : Pooling::sum;
    m.tables.push_back(c);
  }
  m.bottom_mlp = {32, 16};
  m.top_mlp = {64, 32, 1};
  m.cross_layers = 2;
  m.cross_rank = cross_rank;
  m.row_dtype = row_dtype;
  m.init_seed = 2024;
  return m;
}

inline Batch make_batch(const ModelConfig& m, int64_t size, uint64_t seed) {
  Batch b;
  b.reset(size, m.num_dense, m.num_tables());
  b.first_sample = static_cast<int64_t>(seed) * 1000;
  Rng rng(seed);
  for (float& x : b.dense) x = static_cast<float>(std::log1p(10.0 * rng.uniform()));
  for (float& y : b.labels) y = rng.uniform() < 0.35 ? 1.0f : 0.0f;
  for (int t = 0; t < m.num_tables(); ++t)
    for (int64_t s = 0; s < size; ++s) {
      const int64_t len = static_cast<int64_t>(rng.below(4));  // 0..3: empty bags included
      for (int64_t k = 0; k < len; ++k) {
        // A skewed draw: low ids repeat often across the batch.
        const double u = rng.uniform();
        const auto rows = static_cast<double>(m.tables[static_cast<std::size_t>(t)].rows);
        b.ids.push_back(static_cast<int32_t>(std::min(rows - 1, std::floor(rows * u * u * u))));
      }
      b.offsets[static_cast<std::size_t>(t * size + s + 1)] = static_cast<int32_t>(b.ids.size());
    }
  return b;
}

}  // namespace hetrec
