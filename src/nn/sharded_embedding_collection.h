#pragma once
// The embedding tables of a data-parallel job, sharded over the ranks of a process group
// as a ShardingPlan says (dist/sharding.h). Each rank passes its own slice of the global
// batch; every call is collective (all ranks call it, in the same order).
//
// Forward: each id is routed to the rank that holds its row (table_wise: the owner;
// row_wise: the rank of its row range; column_wise: every rank, for its columns) with one
// all-to-all; owners sum their rows per bag and the sums come back with a second one;
// the requester adds row_wise partial sums (in rank order), places column slices, and
// divides mean-pooled bags by their full length. Replicated tables are looked up locally.
// Backward: the pooled gradients go to the same owners (one all-to-all); each owner sums
// the gradient of each unique row over the WHOLE global batch in global sample order and
// applies the fused sparse optimizer once, as the single-rank collection does, so the
// update equals the single-rank update up to the summation order of row_wise partial
// sums. Replicated tables all-gather (ids, gradients) and every rank applies the same
// update. Shards draw their initial values and rounding bits from the full table's
// streams (TableOrigin), so a sharded model starts exactly where the unsharded one does.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/named_tensor.h"
#include "data/batch.h"
#include "dist/process_group.h"
#include "dist/sharding.h"
#include "nn/embedding_collection.h"
#include "nn/embedding_spec.h"
#include "optim/optim_config.h"

namespace hetrec::inline nn {

// One tensor of this rank's part of a table: the block of rows [row_begin, row_begin +
// rows) and columns [col_begin, col_begin + cols) of model table `table`. `name` is the
// unsharded name ("embedding.<table>.weight" or ".accumulator"); a row-wise Adagrad
// accumulator has one column (col_begin 0) whatever the block's columns.
struct ShardTensor {
  NamedTensor tensor;
  int table = 0;
  int64_t row_begin = 0;
  int col_begin = 0;
  bool primary = true;  // false for copies another rank also holds (replicas)
};

class ShardedEmbeddingCollection {
 public:
  // Throws ConfigError as EmbeddingCollection does, and for column_wise tables with
  // row-wise Adagrad on 16-bit rows (not supported).
  ShardedEmbeddingCollection(const EmbeddingSpec& spec, const OptimConfig& optim, uint64_t seed,
                             dist::ShardingPlan plan, dist::ProcessGroup& group);
  ~ShardedEmbeddingCollection();

  int num_tables() const { return static_cast<int>(spec_.tables.size()); }
  int dim() const { return spec_.dim; }
  const dist::ShardingPlan& plan() const { return plan_; }

  // local: this rank's samples. pooled: local.size x num_tables x dim. Collective.
  // Throws DataError naming the table, sample and id for an id outside the table.
  void forward(const Batch& local, float* pooled);
  // grad_pooled: d(global loss)/d(pooled) of the last forward's samples. Collective.
  void backward_update(const float* grad_pooled, float lr, int64_t step);

  // This rank's shards (tables it holds nothing of are absent), sharing storage.
  std::vector<ShardTensor> state();
  // Collective: every table's full tensors, assembled from the ranks' blocks, with the
  // names and order of EmbeddingCollection::state() (copies, on every rank).
  std::vector<NamedTensor> gather_full_state();

 private:
  struct Held;  // one table's shard on this rank and its per-step routing state
  bool serves(int t, int rank) const;
  void update_column_rowwise(int t, const Batch& batch, const std::vector<float>& grad, float lr);

  EmbeddingSpec spec_;
  OptimConfig optim_;
  dist::ShardingPlan plan_;
  dist::ProcessGroup& group_;
  std::vector<std::unique_ptr<Held>> held_;  // per model table; null when not held

  // Routing state of the last forward.
  int64_t local_size_ = 0;
  std::vector<int32_t> bag_length_;                       // [t * B + b]: full bag length
  std::vector<std::vector<std::vector<int32_t>>> sent_;   // [dst][t]: ids per local sample sent to dst
  std::vector<int64_t> source_size_;                      // samples of each source rank
  std::vector<std::vector<std::vector<int32_t>>> received_;  // [src][t]: counts per sample of src
  Batch local_copy_;                                      // the last forward's local batch
};

// Collective over `group`: every table's full tensors, assembled from the primary blocks
// each rank passes in `mine`, named and ordered as EmbeddingCollection::state() (copies,
// on every rank). Shared by the CPU collection and the GPU backend's shards.
std::vector<NamedTensor> gather_full_tables(const std::vector<ShardTensor>& mine, const EmbeddingSpec& spec,
                                            OptimizerKind sparse, dist::ProcessGroup& group);

}  // namespace hetrec::nn::nn
