#pragma once
// Host-side descriptions of the device buffers the table-batched embedding kernels use.
// All tables share one row width and are stored back to back in one weights buffer:
// table t's row r is global row row_offsets[t] + r.
#include <cstdint>

#include "core/dtype.h"
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

enum class SparseOptimizerKind { sgd, adagrad, rowwise_adagrad };

// Where table t of the device's tables sits in a full model table when it holds a shard
// (nn/embedding_collection.h's TableOrigin): its local row r is row r + row_offset of
// model table `table`, its element e is element e + col_offset (even, so the rounding
// draws, two elements each, stay paired).
struct ShardOrigin {
  int table = 0;
  int col_offset = 0;
  int64_t row_offset = 0;
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
};

}  // namespace hetrec::kernels
