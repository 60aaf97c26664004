#pragma once
// All embedding tables of a model in one object (CPU backend): pooled lookup forward,
// and a backward fused with the sparse optimizer, so no dense gradient of a table is
// ever formed. Rows are stored in fp32, fp16 or bf16 (16-bit rows are written back with
// stochastic rounding).
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "data/batch.h"
#include "core/named_tensor.h"
#include "nn/embedding_spec.h"
#include "optim/optim_config.h"

namespace hetrec::inline nn {

// Where a table of the collection sits in a full model table when the collection holds
// shards (distributed training): the block of rows [row_offset, row_offset + rows) and
// columns [col_offset, col_offset + dim) of model table `table`, which has `full_rows`
// rows. Initial values and stochastic-rounding draws are those of the full table, so a
// sharded model starts and rounds exactly as the unsharded one. col_offset must be even.
struct TableOrigin {
  int table = 0;
  int64_t row_offset = 0;
  int64_t full_rows = 0;
  int col_offset = 0;
};

class EmbeddingCollection {
 public:
  // Rows initialised uniform in [-1/sqrt(rows), 1/sqrt(rows)] (the DLRM reference
  // initialisation) from `seed`: row r of table t comes from the counter-based stream
  // (seed, t, r), so the values do not depend on the thread count. Optimizer state from
  // `optim`. Throws ConfigError for a row dtype other than fp32/fp16/bf16, a sparse
  // optimizer other than SGD/Adagrad/row-wise Adagrad, or a table without rows.
  EmbeddingCollection(const EmbeddingSpec& spec, const OptimConfig& optim, uint64_t seed);
  // Shards: table i of `spec` is the block `origins[i]` of a model table (spec.dim is the
  // shard's column count).
  EmbeddingCollection(const EmbeddingSpec& spec, const OptimConfig& optim, uint64_t seed,
                      std::vector<TableOrigin> origins);

  int num_tables() const;
  int dim() const;
  int64_t rows(int table) const;
  const TableConfig& table(int table) const;
  DType row_dtype() const { return row_dtype_; }

  // pooled: batch.size x num_tables x dim, row-major ([b][t][d]). Sum or mean pooling per
  // table; an empty bag pools to zeros. Throws DataError naming the table, sample and id
  // when an id is outside [0, rows).
  void forward(const Batch& batch, float* pooled) const;

  // grad_pooled has the layout of `pooled`. Gradients of duplicate ids across the batch
  // are summed per unique row (in sample order, so the result does not depend on the
  // thread count), then the sparse optimizer (SGD, Adagrad or row-wise Adagrad, from
  // OptimConfig::sparse) updates each touched row once, in place.
  // `step` seeds the stochastic rounding of 16-bit rows (deterministic per step and row;
  // see optim/sparse_row_storage.h).
  void backward_update(const Batch& batch, const float* grad_pooled, float lr, int64_t step);

  // Tables ("embedding.<name>.weight", rows x dim) and optimizer slots
  // ("embedding.<name>.<slot>"), sharing storage with the collection. Table by table in
  // config order: the weight (row dtype), then for both Adagrads the fp32
  // "embedding.<name>.accumulator" (Adagrad: rows x dim; row-wise Adagrad: rows).
  std::vector<NamedTensor> state();

 private:
  struct Table {
    TableConfig config;
    TableOrigin origin;
    Tensor weight;       // rows x dim in the row dtype
    Tensor accumulator;  // Adagrad: rows x dim; row-wise Adagrad: rows; SGD: undefined
  };
  // Throws DataError when the batch's shape, offsets or ids do not fit the tables.
  void validate(const Batch& batch) const;
  template <class Rows>
  void forward_rows(const Batch& batch, float* pooled) const;
  template <class Rows>
  void update_rows(const Batch& batch, const float* grad_pooled, float lr, int64_t step);
  // Fills table t's slice of sort_keys_ with (id << 32 | sample), sorts it by id keeping
  // samples ascending, and records where each unique id's run begins.
  void group_by_row(const Batch& batch, int t, uint32_t* histogram);

  std::vector<Table> tables_;
  int dim_;
  DType row_dtype_;
  OptimConfig optim_;
  uint64_t seed_;

  // Scratch of backward_update, kept between steps to avoid per-step allocation. The
  // sort buffers are indexed like batch.ids (each table owns its slice of ids).
  std::vector<uint64_t> sort_keys_;       // (id << 32 | sample), sorted per table
  std::vector<uint64_t> sort_scratch_;    // radix-sort ping-pong buffer
  std::vector<int64_t> run_begin_;        // table t: run starts from its first id + t on
  std::vector<int64_t> num_runs_;         // unique ids of each table in this batch
  std::vector<int> table_order_;          // tables by descending id count
  std::vector<uint32_t> histograms_;      // one radix histogram per thread
  std::vector<float> row_scratch_;        // per thread: summed gradient + fp32 row
};

}  // namespace hetrec::nn::nn
