#pragma once
// All embedding tables of a model in one object (CPU backend): pooled lookup forward,
// and a backward fused with the sparse optimizer, so no dense gradient of a table is
// ever formed. Rows are stored in fp32, fp16 or bf16 (16-bit rows are written back with
// stochastic rounding).
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "data/batch.h"
#include "model/model.h"
#include "model/model_config.h"

namespace hetrec {

class EmbeddingCollection {
 public:
  // Rows initialised uniform in [-1/sqrt(rows), 1/sqrt(rows)] (the DLRM reference
  // initialisation) from `seed`; optimizer state from `optim`.
  EmbeddingCollection(const ModelConfig& model, const OptimConfig& optim, uint64_t seed);

  int num_tables() const;
  int dim() const;
  int64_t rows(int table) const;

  // pooled: batch.size x num_tables x dim, row-major ([b][t][d]). Sum or mean pooling per
  // table; an empty bag pools to zeros. Throws DataError naming the table, sample and id
  // when an id is outside [0, rows).
  void forward(const Batch& batch, float* pooled) const;

  // grad_pooled has the layout of `pooled`. Gradients of duplicate ids across the batch
  // are summed per unique row, then the sparse optimizer (SGD, Adagrad or row-wise
  // Adagrad, from OptimConfig::sparse) updates each touched row once, in place.
  // `step` seeds the stochastic rounding of 16-bit rows (deterministic per step and row).
  void backward_update(const Batch& batch, const float* grad_pooled, float lr, int64_t step);

  // Tables ("embedding.<name>.weight", rows x dim) and optimizer slots
  // ("embedding.<name>.<slot>"), sharing storage with the collection.
  std::vector<NamedTensor> state();

 private:
  struct Table {
    TableConfig config;
    Tensor weight;       // rows x dim in the row dtype
    Tensor accumulator;  // Adagrad: rows x dim; row-wise Adagrad: rows; SGD: undefined
  };
  std::vector<Table> tables_;
  int dim_;
  DType row_dtype_;
  OptimConfig optim_;
  uint64_t seed_;
};

}  // namespace hetrec
