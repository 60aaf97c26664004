#include "kernels/column_sum.h"

#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

constexpr int kThreads = 256;
// Rows summed sequentially by one thread before the partials are combined: a few
// hundred keeps both passes short for batches of 1k to 256k samples.
constexpr int64_t kRowsPerChunk = 256;

// partial[chunk][c] = sum over the chunk's rows of (masked) m[r][c]. Threads of a warp
// take consecutive columns, so every row is read coalesced.
template <bool kRelu>
__global__ void __launch_bounds__(kThreads)
    chunk_sum_kernel(const float* dy, const float* __restrict__ y, float* dz, int64_t rows, int64_t cols, int64_t ld,
                     float* __restrict__ partial) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const int64_t chunk = blockIdx.y;
  if (c >= cols) return;
  const int64_t r_end = (chunk + 1) * kRowsPerChunk < rows ? (chunk + 1) * kRowsPerChunk : rows;
  float acc = 0.0f;
  for (int64_t r = chunk * kRowsPerChunk; r < r_end; ++r) {
    float v = dy[r * ld + c];
    if constexpr (kRelu) {
      v = y[r * ld + c] > 0.0f ? v : 0.0f;
      dz[r * ld + c] = v;
    }
    acc += v;
  }
  partial[chunk * cols + c] = acc;
}

__global__ void __launch_bounds__(kThreads)
    combine_chunks_kernel(const float* __restrict__ partial, int64_t chunks, int64_t cols, float* __restrict__ sums) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= cols) return;
  float acc = 0.0f;
  for (int64_t k = 0; k < chunks; ++k) acc += partial[k * cols + c];
  sums[c] = acc;
}

template <bool kRelu>
void launch(const float* dy, const float* y, float* dz, int64_t rows, int64_t cols, int64_t ld, float* sums,
            void* workspace, std::size_t workspace_bytes, gpu::stream_t stream) {
  if (cols == 0) return;
  if (workspace_bytes < column_sum_workspace_bytes(rows, cols))
    throw InternalError("column_sum: workspace of " + std::to_string(workspace_bytes) + " bytes, need " +
                        std::to_string(column_sum_workspace_bytes(rows, cols)));
  const int64_t chunks = rows > 0 ? ceil_div(rows, kRowsPerChunk) : 0;
  auto* partial = static_cast<float*>(workspace);
  if (chunks > 0) {
    constexpr int64_t kMaxGridY = 65535;
    if (chunks > kMaxGridY) throw InternalError("column_sum: too many rows (" + std::to_string(rows) + ")");
    const dim3 grid(grid_for(cols, kThreads), static_cast<unsigned>(chunks));
    chunk_sum_kernel<kRelu><<<grid, kThreads, 0, stream>>>(dy, y, dz, rows, cols, ld, partial);
    HETREC_GPU_CHECK_LAUNCH("chunk_sum_kernel");
  }
  combine_chunks_kernel<<<grid_for(cols, kThreads), kThreads, 0, stream>>>(partial, chunks, cols, sums);
  HETREC_GPU_CHECK_LAUNCH("combine_chunks_kernel");
}

}  // namespace

std::size_t column_sum_workspace_bytes(int64_t rows, int64_t cols) {
  const int64_t chunks = rows > 0 ? ceil_div(rows, kRowsPerChunk) : 0;
  return static_cast<std::size_t>(chunks * cols) * sizeof(float);
}

void column_sum(const float* m, int64_t rows, int64_t cols, int64_t ld, float* sums, void* workspace,
                std::size_t workspace_bytes, gpu::stream_t stream) {
  launch<false>(m, nullptr, nullptr, rows, cols, ld, sums, workspace, workspace_bytes, stream);
}

void relu_backward_column_sum(const float* dy, const float* y, float* dz, int64_t rows, int64_t cols, int64_t ld,
                              float* sums, void* workspace, std::size_t workspace_bytes, gpu::stream_t stream) {
  launch<true>(dy, y, dz, rows, cols, ld, sums, workspace, workspace_bytes, stream);
}

}  // namespace hetrec::kernels
