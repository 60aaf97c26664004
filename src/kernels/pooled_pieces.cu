#include "kernels/pooled_pieces.h"

#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/half.h"
#include "gpu/warp.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

constexpr int kThreads = 256;
// Gather: a block covers kThreads columns of X's rows for kGatherSamples samples (more
// loads in flight per thread, the slot's piece list read once for all of them).
constexpr int kGatherSamples = 4;
// Scatter: a block of kThreads / kWarpSize warps covers kScatterSamples samples of one
// piece, a warp a sample at a time with its lanes along the piece's columns.
constexpr int kScatterSamples = 32;
// The hardware limit of gridDim.y (the column tiles of gather, the pieces of scatter).
constexpr int64_t kMaxGridY = 65535;

// Thread = one column of X (slot t, column c) for kGatherSamples samples; the pieces of
// slot t are folded in list order into a register, then the column is written once.
__global__ void __launch_bounds__(kThreads)
    gather_pieces_kernel(const PooledPiece* __restrict__ pieces, const int* __restrict__ slot_begin, int num_slots,
                         int64_t batch, float* __restrict__ x, int64_t x_stride, int dim) {
  const int col = static_cast<int>(blockIdx.y) * kThreads + static_cast<int>(threadIdx.x);
  if (col >= num_slots * dim) return;
  const int t = col / dim;
  const int c = col - t * dim;
  const int first = slot_begin[t];
  const int last = slot_begin[t + 1];
  const int64_t b0 = static_cast<int64_t>(blockIdx.x) * kGatherSamples;
#pragma unroll
  for (int k = 0; k < kGatherSamples; ++k) {
    const int64_t b = b0 + k;
    if (b >= batch) break;
    float* out = x + b * x_stride + col;
    float v = 0.0f;
    bool have = false;
    for (int p = first; p < last; ++p) {
      const PooledPiece& piece = pieces[p];
      const int e = c - piece.col_begin;
      if (e < 0 || e >= piece.width) continue;
      const int64_t at = b * piece.src_stride + e;
      const float s = piece.src_bf16 ? gpu::bf16_bits_to_f32(static_cast<const uint16_t*>(piece.src)[at])
                                     : static_cast<const float*>(piece.src)[at];
      if (!piece.accumulate) {
        v = s;
      } else {
        if (!have) v = *out;
        v = v + s;
      }
      have = true;
    }
    if (have) *out = v;
  }
}

__global__ void __launch_bounds__(kThreads)
    scatter_grads_kernel(const PooledGradPiece* __restrict__ pieces, int64_t batch, const float* __restrict__ g,
                         int64_t g_stride, int dim) {
  const PooledGradPiece piece = pieces[blockIdx.y];
  const int lane = gpu::lane_id();
  const int warp = static_cast<int>(threadIdx.x) / gpu::kWarpSize;
  constexpr int kWarps = kThreads / gpu::kWarpSize;
  const float* src_base = g + static_cast<int64_t>(piece.slot) * dim + piece.col_begin;
  for (int k = warp; k < kScatterSamples; k += kWarps) {
    const int64_t b = static_cast<int64_t>(blockIdx.x) * kScatterSamples + k;
    if (b >= batch) return;
    const float* src = src_base + b * g_stride;
    if (piece.dst_bf16) {
      uint16_t* dst = static_cast<uint16_t*>(piece.dst) + b * piece.dst_stride;
      for (int e = lane; e < piece.width; e += gpu::kWarpSize) dst[e] = gpu::f32_to_bf16_bits(src[e]);
    } else {
      float* dst = static_cast<float*>(piece.dst) + b * piece.dst_stride;
      for (int e = lane; e < piece.width; e += gpu::kWarpSize) dst[e] = src[e];
    }
  }
}

}  // namespace

void gather_pooled_pieces(const PooledPiece* pieces, const int* slot_begin, int num_slots, int64_t batch, float* x,
                          int64_t x_stride, int dim, gpu::stream_t stream) {
  if (num_slots < 0 || batch < 0 || dim <= 0 || x_stride < static_cast<int64_t>(num_slots) * dim)
    throw InternalError("gather_pooled_pieces: " + std::to_string(num_slots) + " slots of " + std::to_string(dim) +
                        " columns, " + std::to_string(batch) + " samples, row stride " + std::to_string(x_stride) +
                        " (expected at least slots x dim)");
  if (num_slots == 0 || batch == 0) return;
  const int64_t tiles = ceil_div<int64_t>(static_cast<int64_t>(num_slots) * dim, kThreads);
  if (tiles > kMaxGridY)
    throw InternalError("gather_pooled_pieces: rows of " + std::to_string(static_cast<int64_t>(num_slots) * dim) +
                        " columns exceed the grid");
  const dim3 grid(grid_for(batch, kGatherSamples), static_cast<unsigned>(tiles));
  gather_pieces_kernel<<<grid, kThreads, 0, stream>>>(pieces, slot_begin, num_slots, batch, x, x_stride, dim);
  HETREC_GPU_CHECK_LAUNCH("gather_pieces_kernel");
}

void scatter_pooled_grads(const PooledGradPiece* pieces, int num_pieces, int64_t batch, const float* g,
                          int64_t g_stride, int dim, gpu::stream_t stream) {
  if (num_pieces < 0 || batch < 0 || dim <= 0 || num_pieces > kMaxGridY)
    throw InternalError("scatter_pooled_grads: " + std::to_string(num_pieces) + " pieces (at most " +
                        std::to_string(kMaxGridY) + "), " + std::to_string(batch) + " samples, dim " +
                        std::to_string(dim));
  if (num_pieces == 0 || batch == 0) return;
  const dim3 grid(grid_for(batch, kScatterSamples), static_cast<unsigned>(num_pieces));
  scatter_grads_kernel<<<grid, kThreads, 0, stream>>>(pieces, batch, g, g_stride, dim);
  HETREC_GPU_CHECK_LAUNCH("scatter_grads_kernel");
}

}  // namespace hetrec::kernels
