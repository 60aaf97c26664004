#pragma once
// Initialises embedding tables on the device, so that tables far larger than host memory
// never pass through it, with exactly the values the CPU collection draws
// (nn/embedding_collection.cpp): row r of table t is uniform in [-sqrt(1/rows_t),
// sqrt(1/rows_t)], element d from the (d+1)-th draw of Rng(table_key_t, r), rounded to
// nearest into the row dtype. A shard (a block of a full table, as
// nn/embedding_collection.h's TableOrigin describes it) gets the full table's values of
// its block: row r draws from Rng(table_key, r + row_offset) after skipping col_offset
// draws, bounded by sqrt(1/full_rows).
#include <cstdint>

#include "core/dtype.h"
#include "gpu/platform.h"

namespace hetrec::kernels {

// The key the CPU collection derives for table t from the model's init seed.
uint64_t embedding_table_init_key(uint64_t init_seed, int table);

// Where the initialised rows sit in their full table (the default: the whole table).
struct EmbeddingInitBlock {
  int64_t row_offset = 0;  // the block's first row within the full table
  int64_t full_rows = 0;   // rows of the full table (0: the block's rows)
  int col_offset = 0;      // the block's first column within the full table
};

// rows x dim elements of `dtype` (f32, f16, bf16) at `weights`, the block `block` of the
// full table keyed by `table_key`.
void embedding_init_uniform(void* weights, int64_t rows, int dim, DType dtype, uint64_t table_key,
                            gpu::stream_t stream, const EmbeddingInitBlock& block = {});

// n floats set to value (optimizer accumulators and other state).
void fill_f32(float* data, int64_t n, float value, gpu::stream_t stream);

}  // namespace hetrec::kernels
