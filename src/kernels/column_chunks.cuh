#pragma once
// Element-wise passes over a rows x cols matrix that also sum each column (the bias
// gradients), in one fixed order whatever the launch: one thread per column walks a chunk
// of kColumnChunkRows rows in order, then the chunk partials are added in chunk order.
// Threads of a warp take consecutive columns, so every row is read and written coalesced.
// Used by kernels/column_sum.cu; the fused cross-net backward's built-in variant
// (tunable/cross_net/cross_net_kernel.cuh) walks the same chunks in the same order and adds its
// partials with combine_column_chunks_kernel, so both produce bit-identical bias
// gradients for the same values.
//
// The pass is a functor `float op(int64_t r, int64_t c)` that does its element's work
// (reads and writes) and returns the value summed into column c.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/platform.h"
#include "kernels/column_sum_geometry.h"  // kColumnChunkThreads, kColumnChunkRows, column_chunk_count
#include "kernels/launch.h"

namespace hetrec::kernels {

// partial[chunk][c] = sum over the chunk's rows of op(r, c).
template <class Op>
__global__ void __launch_bounds__(kColumnChunkThreads)
    column_chunk_kernel(Op op, int64_t rows, int64_t cols, float* __restrict__ partial) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumnChunkThreads + threadIdx.x;
  const int64_t chunk = blockIdx.y;
  if (c >= cols) return;
  const int64_t r_begin = chunk * kColumnChunkRows;
  const int64_t r_end = r_begin + kColumnChunkRows < rows ? r_begin + kColumnChunkRows : rows;
  float acc = 0.0f;
  for (int64_t r = r_begin; r < r_end; ++r) acc += op(r, c);
  partial[chunk * cols + c] = acc;
}

// sums[c] = the chunk partials of column c, added in chunk order.
template <int kUnused = 0>
__global__ void __launch_bounds__(kColumnChunkThreads)
    combine_column_chunks_kernel(const float* __restrict__ partial, int64_t chunks, int64_t cols,
                                 float* __restrict__ sums) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumnChunkThreads + threadIdx.x;
  if (c >= cols) return;
  float acc = 0.0f;
  for (int64_t k = 0; k < chunks; ++k) acc += partial[k * cols + c];
  sums[c] = acc;
}

// Runs op over every element and writes the column sums to `sums` (cols floats). The
// workspace holds the chunk partials: column_chunk_count(rows) * cols floats.
template <class Op>
void run_column_chunks(const Op& op, int64_t rows, int64_t cols, float* sums, void* workspace,
                       std::size_t workspace_bytes, gpu::stream_t stream, const char* who) {
  if (cols == 0) return;
  const int64_t chunks = column_chunk_count(rows);
  const std::size_t needed = column_sum_workspace_bytes(rows, cols);
  if (workspace_bytes < needed)
    throw InternalError(std::string(who) + ": workspace of " + std::to_string(workspace_bytes) + " bytes, need " +
                        std::to_string(needed));
  auto* partial = static_cast<float*>(workspace);
  if (chunks > 0) {
    constexpr int64_t kMaxGridY = 65535;
    if (chunks > kMaxGridY) throw InternalError(std::string(who) + ": too many rows (" + std::to_string(rows) + ")");
    const dim3 grid(grid_for(cols, kColumnChunkThreads), static_cast<unsigned>(chunks));
    column_chunk_kernel<<<grid, kColumnChunkThreads, 0, stream>>>(op, rows, cols, partial);
    HETREC_GPU_CHECK_LAUNCH(who);
  }
  combine_column_chunks_kernel<<<grid_for(cols, kColumnChunkThreads), kColumnChunkThreads, 0, stream>>>(
      partial, chunks, cols, sums);
  HETREC_GPU_CHECK_LAUNCH("combine_column_chunks_kernel");
}

}  // namespace hetrec::kernels
