#pragma once
// Initialises embedding tables on the device, so that tables far larger than host memory
// never pass through it, with exactly the values the CPU collection draws
// (nn/embedding_collection.cpp): row r of table t is uniform in [-sqrt(1/rows_t),
// sqrt(1/rows_t)], element d from the (d+1)-th draw of Rng(table_key_t, r), rounded to
// nearest into the row dtype.
#include <cstdint>

#include "core/dtype.h"
#include "gpu/platform.h"

namespace hetrec::kernels {

// The key the CPU collection derives for table t from the model's init seed.
uint64_t embedding_table_init_key(uint64_t init_seed, int table);

// rows x dim elements of `dtype` (f32, f16, bf16) at `weights`.
void embedding_init_uniform(void* weights, int64_t rows, int dim, DType dtype, uint64_t table_key,
                            gpu::stream_t stream);

// n floats set to value (optimizer accumulators and other state).
void fill_f32(float* data, int64_t n, float value, gpu::stream_t stream);

}  // namespace hetrec::kernels
