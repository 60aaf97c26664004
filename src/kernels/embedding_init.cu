#include "core/seed_streams.h"
#include "kernels/embedding_init.h"

#include <string>

#include "core/error.h"
#include "core/rng.h"
#include "gpu/check.h"
#include "gpu/fp_ops.h"
#include "gpu/half.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

constexpr int kThreads = 256;
// Rng::uniform(): the top 53 bits of a draw scaled to [0, 1).
constexpr int kUniformShift = 11;
constexpr double kUniformScale = 0x1.0p-53;

template <class Store>
__global__ void __launch_bounds__(kThreads)
    init_rows_kernel(Store* __restrict__ weights, int64_t rows, int dim, uint64_t table_key, double bound,
                     int64_t row_offset, int col_offset) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (r >= rows) return;
  Rng rng(table_key, static_cast<uint64_t>(r + row_offset));
  rng.set_counter(static_cast<uint64_t>(col_offset));  // skip the columns before the block
  Store* row = weights + r * dim;
  for (int d = 0; d < dim; ++d) {
    const double u = static_cast<double>(rng.next_u64() >> kUniformShift) * kUniformScale;
    // (2u - 1) * bound: 2u - 1 is exact, so a fused multiply-add cannot change it.
    const float v = static_cast<float>(gpu::mul_rn(2.0 * u - 1.0, bound));
    if constexpr (sizeof(Store) == sizeof(float)) {
      row[d] = v;
    } else if constexpr (Store::kBf16) {
      row[d] = Store{gpu::f32_to_bf16_bits(v)};
    } else {
      row[d] = Store{gpu::f32_to_f16_bits(v)};
    }
  }
}

struct Bf16Store {
  static constexpr bool kBf16 = true;
  uint16_t bits;
};
struct F16Store {
  static constexpr bool kBf16 = false;
  uint16_t bits;
};

__global__ void __launch_bounds__(kThreads) fill_kernel(float* __restrict__ data, int64_t n, float value) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) data[i] = value;
}

}  // namespace

uint64_t embedding_table_init_key(uint64_t init_seed, int table) {
  return seed_streams::embedding_init_table_key(init_seed, static_cast<uint64_t>(table));
}

void embedding_init_uniform(void* weights, int64_t rows, int dim, DType dtype, uint64_t table_key,
                            gpu::stream_t stream, const EmbeddingInitBlock& block) {
  if (rows <= 0) return;
  const int64_t full_rows = block.full_rows > 0 ? block.full_rows : rows;
  if (block.row_offset < 0 || block.col_offset < 0 || block.row_offset + rows > full_rows)
    throw InternalError("embedding_init_uniform: rows [" + std::to_string(block.row_offset) + ", " +
                        std::to_string(block.row_offset + rows) + ") of a table of " + std::to_string(full_rows) +
                        " rows (column offset " + std::to_string(block.col_offset) + ")");
  const double bound = std::sqrt(1.0 / static_cast<double>(full_rows));
  const unsigned grid = grid_for(rows, kThreads);
  switch (dtype) {
    case DType::f32:
      init_rows_kernel<float><<<grid, kThreads, 0, stream>>>(static_cast<float*>(weights), rows, dim, table_key, bound,
                                                                  block.row_offset, block.col_offset);
      break;
    case DType::bf16:
      init_rows_kernel<Bf16Store><<<grid, kThreads, 0, stream>>>(static_cast<Bf16Store*>(weights), rows, dim,
                                                                 table_key, bound, block.row_offset, block.col_offset);
      break;
    case DType::f16:
      init_rows_kernel<F16Store><<<grid, kThreads, 0, stream>>>(static_cast<F16Store*>(weights), rows, dim,
                                                                table_key, bound, block.row_offset, block.col_offset);
      break;
    default: throw ConfigError("embedding rows must be fp32, fp16 or bf16, got " + std::string(dtype_name(dtype)));
  }
  HETREC_GPU_CHECK_LAUNCH("init_rows_kernel");
}

void fill_f32(float* data, int64_t n, float value, gpu::stream_t stream) {
  if (n <= 0) return;
  fill_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(data, n, value);
  HETREC_GPU_CHECK_LAUNCH("fill_kernel");
}

}  // namespace hetrec::kernels
