#pragma once
// Host-side descriptions of the device buffers the table-batched embedding kernels use.
// All tables share one row width and are stored back to back in one weights buffer:
// table t's row r is global row row_offsets[t] + r.
#include <cstdint>

#include "core/dtype.h"
#include "kernels/sort_choice.h"
#include "tunable/sparse_update/sparse_update_types.h"
#include "kernels/step_scalars.h"

namespace hetrec::kernels {

struct EmbeddingTables {
  void* weights = nullptr;                // total_rows x dim, elements of row_dtype
  const int64_t* row_offsets = nullptr;   // device, num_tables + 1 (first global row of each table)
  const uint8_t* mean_pooling = nullptr;  // device, num_tables: 1 = mean, 0 = sum
  int num_tables = 0;
  int dim = 0;
  int64_t total_rows = 0;
  DType row_dtype = DType::f32;           // f32, f16 or bf16
  // Optional, device memory, num_tables pointers: table t's row r is at
  // table_weights[t] + r * dim instead of weights + (row_offsets[t] + r) * dim. Lets
  // tables live in different memories (device memory, or page-locked host memory
  // through its device alias); the global row numbering above is unchanged.
  void* const* table_weights = nullptr;
};

// One batch's bags in the Batch CSR layout (data/batch.h), on the device.
struct DeviceBags {
  const int32_t* offsets = nullptr;  // num_tables * batch + 1; offsets[num_tables * batch] ids in all
  const int32_t* ids = nullptr;      // row ids local to their table
  int64_t batch = 0;                 // samples B
  // An upper bound of the id count (the capacity of `ids`). Grids are sized from it and
  // the exact count is read on the device, so a captured graph serves any batch whose
  // ids fit.
  int64_t max_ids = 0;
};

// Pooled vectors: element (b, t, d) lives at data[b * row_stride + t * dim + d], so the
// pooled embeddings can be written straight into a wider concatenation buffer.
struct PooledView {
  void* data = nullptr;
  int64_t row_stride = 0;  // elements between samples
  DType dtype = DType::f32;  // f32 or bf16
};

// The gradient of the pooled output that the backward reads: element (b, t, d) at
// data[b * row_stride + t * dim + d], fp32 or bf16 (a bf16 embedding exchange's).
struct PooledGradView {
  const void* data = nullptr;
  int64_t row_stride = 0;  // elements between samples
  DType dtype = DType::f32;  // f32 or bf16
};

struct SparseOptimizerParams {
  SparseOptimizerKind kind = SparseOptimizerKind::sgd;
  float eps = 1e-8f;
  // Adagrad: total_rows x dim floats; row-wise Adagrad: total_rows floats; SGD: unused.
  float* accumulators = nullptr;
  // Optional, device memory, num_tables pointers (with EmbeddingTables::table_weights):
  // table t's accumulators start at table_accumulators[t] (local row r at r * state).
  float* const* table_accumulators = nullptr;
  // Stochastic rounding of 16-bit rows draws its bits from (seed, step, table, row,
  // element): see kernels/sparse_rounding.h.
  uint64_t seed = 0;
  // Optional, device memory, num_tables entries: the draws of table t are those of the
  // full table's block shard_origins[t] (model table, row + row_offset, element +
  // col_offset), as the CPU collection draws them for a shard. Null: table t is model
  // table t, whole.
  const ShardOrigin* shard_origins = nullptr;
  // Device memory: the learning rate (sparse_lr), the step, and skip_update (no row is
  // touched when it is set).
  const StepScalars* scalars = nullptr;
  // The sort that orders the occurrences (model.sort; kernels/sort_pairs.h). Either gives
  // the same result.
  SortImpl sort = SortImpl::automatic;
};

// One batch's occurrences sorted by row and summarised per unique row, as the
// backward's preparation leaves them in its workspace for the update kernel (device
// pointers; the counts live on the device).
struct SparseUpdatePlan {
  const uint32_t* sorted_keys = nullptr;    // global row of each occurrence, ascending
  const uint32_t* sorted_bags = nullptr;    // its bag t * B + b
  const uint32_t* segment_start = nullptr;  // per unique row: first sorted position; [U]: the id count
  const uint32_t* num_unique = nullptr;     // U
  const uint32_t* chunks = nullptr;         // per unique row: chunk count (0: a short row)
  const uint32_t* chunk_start = nullptr;    // per unique row: its first chunk
  const float* partial = nullptr;           // per chunk: dim floats, its gradient sum
  int64_t max_rows = 0;                     // an upper bound of U (sizes the update's grid)
};

}  // namespace hetrec::kernels
