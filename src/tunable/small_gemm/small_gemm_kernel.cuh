#pragma once
// GEMMs with one dimension of at most 16 (the MLP layers cuBLASLt's big-shape tiles fit
// badly: a 1-wide logit layer, a 13-wide input layer), in the row-major language of
// gemm/cublaslt_gemm.h, fp32 accumulation and an fp32 output. Operands are fp32, bf16 or
// fp16 (Bf16Bits, F16Bits: kernels/row_vector.cuh). Three kernels, one per way a small
// dimension can appear; the shape's small width is a template argument (compiled per
// shape), every tunable knob another:
//
//  rows    C[M,N] = A[M,K] op(B) + epilogue, N <= 16 (a GEMV when N = 1). B (N x K if
//          B_TRANS, else K x N) is staged in shared memory as N rows of the padded width
//          kp = round_up(K, 4) floats. LANES threads share one row of A: each reads VEC
//          consecutive elements, UNROLL vectors issued before the first is used, then the
//          N partial dots are added across the lanes by shuffles.
//  outer   C[M,N] = A[M,K] op(B) + epilogue, K <= 16 (an outer product when K = 1). Each
//          thread keeps the K x VEC slice of B for its VEC columns in registers and
//          streams rows: ROWS_PER_BLOCK row groups of ceil(N / VEC) threads per block,
//          UNROLL rows per thread in flight.
//  reduce  C = X^T Y over the M batch rows of X[M, NARROW] and Y[M, WIDE], NARROW <= 16
//          (a weight gradient: dW = dZ^T X). Each thread owns VEC consecutive columns of
//          Y against all NARROW columns of X; ROWS_PER_BLOCK row groups per block each
//          take every ROWS_PER_BLOCK-th row of the block's chunk, UNROLL rows in flight.
//          Block b sums chunk b of the rows (chunks of ceil(M / gridDim.x)) and writes
//          its partial NARROW x WIDE sum; small_gemm_reduce_finish adds the partials in
//          chunk order. Both passes have a fixed order, so the result is deterministic.
// Row strides lda, ldb, ldc are in elements; vector accesses need them and the
// pointers aligned to VEC elements (the launcher checks).
#include <cstdint>

#include "gpu/platform.h"
#include "gpu/warp.h"
#include "kernels/row_vector.cuh"

namespace hetrec::kernels {

// Epilogues of the forward GEMMs (as cublaslt::Epilogue none / bias / relu_bias).
constexpr int kSmallGemmNoEpilogue = 0;
constexpr int kSmallGemmBias = 1;
constexpr int kSmallGemmReluBias = 2;

// Shared rows are padded to a multiple of this many floats so that vector reads of them
// stay 16-byte aligned.
constexpr int kSmallGemmSharedPad = 4;

__device__ inline int small_gemm_padded(int k) { return (k + kSmallGemmSharedPad - 1) / kSmallGemmSharedPad * kSmallGemmSharedPad; }

template <int EPILOGUE>
__device__ inline float small_gemm_epilogue(float acc, const float* bias, int n) {
  if (EPILOGUE == kSmallGemmNoEpilogue) return acc;
  const float v = acc + bias[n];
  return EPILOGUE == kSmallGemmReluBias ? fmaxf(v, 0.0f) : v;
}

// Dynamic shared memory: N x small_gemm_padded(K) floats.
template <class T, int N, int LANES, int ROWS_PER_BLOCK, int VEC, int UNROLL, bool B_TRANS, int EPILOGUE>
__global__ void __launch_bounds__(LANES * ROWS_PER_BLOCK)
    small_gemm_rows(const T* __restrict__ a, int64_t lda, const T* __restrict__ b, int64_t ldb,
                    float* __restrict__ c, int64_t ldc, const float* __restrict__ bias, int64_t m, int k) {
  extern __shared__ float staged_b[];
  const int kp = small_gemm_padded(k);
  for (int e = threadIdx.x; e < N * kp; e += blockDim.x) {
    const int n = e / kp, kk = e - n * kp;
    staged_b[e] = kk < k ? to_float(B_TRANS ? b[n * ldb + kk] : b[static_cast<int64_t>(kk) * ldb + n]) : 0.0f;
  }
  __syncthreads();
  const int lane = threadIdx.x % LANES;
  const int group = threadIdx.x / LANES;
  const int k_vec = k / VEC * VEC;  // elements read as whole vectors; the rest one by one
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * ROWS_PER_BLOCK; first < m;
       first += static_cast<int64_t>(gridDim.x) * ROWS_PER_BLOCK) {
    const int64_t row = first + group;
    const bool active = row < m;
    float acc[N];
#pragma unroll
    for (int n = 0; n < N; ++n) acc[n] = 0.0f;
    if (active) {
      const T* a_row = a + row * lda;
      for (int k0 = lane * VEC; k0 < k_vec; k0 += LANES * VEC * UNROLL) {
        float x[UNROLL][VEC];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          const int kk = k0 + u * LANES * VEC;
          if (kk < k_vec) {
            load_vec<VEC>(a_row + kk, x[u]);
          } else {
#pragma unroll
            for (int v = 0; v < VEC; ++v) x[u][v] = 0.0f;
          }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          const int kk = k0 + u * LANES * VEC;
          if (kk >= k_vec) break;
#pragma unroll
          for (int n = 0; n < N; ++n) {
            float w[VEC];
            load_vec<VEC>(staged_b + n * kp + kk, w);
#pragma unroll
            for (int v = 0; v < VEC; ++v) acc[n] = fmaf(x[u][v], w[v], acc[n]);
          }
        }
      }
      for (int kk = k_vec + lane; kk < k; kk += LANES) {
        const float x = to_float(a_row[kk]);
#pragma unroll
        for (int n = 0; n < N; ++n) acc[n] = fmaf(x, staged_b[n * kp + kk], acc[n]);
      }
    }
    // Lanes of a row are adjacent threads of one warp: add their partial dots.
#pragma unroll
    for (int offset = LANES / 2; offset > 0; offset /= 2)
#pragma unroll
      for (int n = 0; n < N; ++n) acc[n] += gpu::shfl_xor(acc[n], offset, LANES);
    if (active)
#pragma unroll
      for (int n = 0; n < N; ++n)
        if (n % LANES == lane) c[row * ldc + n] = small_gemm_epilogue<EPILOGUE>(acc[n], bias, n);
  }
}

// Threads per block: ROWS_PER_BLOCK x ceil(n / VEC) (the launcher's). No shared memory.
template <class T, int K, int ROWS_PER_BLOCK, int VEC, int UNROLL, bool B_TRANS, int EPILOGUE>
__global__ void small_gemm_outer(const T* __restrict__ a, int64_t lda, const T* __restrict__ b, int64_t ldb,
                                 float* __restrict__ c, int64_t ldc, const float* __restrict__ bias, int64_t m,
                                 int n) {
  const int per_row = (n + VEC - 1) / VEC;
  const int slice = threadIdx.x % per_row;
  const int group = threadIdx.x / per_row;
  const int col = slice * VEC;
  const bool whole = col + VEC <= n;  // the last slice may be partial: element by element
  float w[K][VEC];
  float add[VEC];
#pragma unroll
  for (int v = 0; v < VEC; ++v) {
    const int j = col + v < n ? col + v : n - 1;
#pragma unroll
    for (int kk = 0; kk < K; ++kk) w[kk][v] = to_float(B_TRANS ? b[j * ldb + kk] : b[static_cast<int64_t>(kk) * ldb + j]);
    add[v] = EPILOGUE == kSmallGemmNoEpilogue ? 0.0f : bias[j];
  }
  const int64_t row_step = static_cast<int64_t>(gridDim.x) * ROWS_PER_BLOCK;
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * ROWS_PER_BLOCK + group; first < m;
       first += row_step * UNROLL) {
    float x[UNROLL][K];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int64_t row = first + u * row_step;
#pragma unroll
      for (int kk = 0; kk < K; ++kk) x[u][kk] = row < m ? to_float(a[row * lda + kk]) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int64_t row = first + u * row_step;
      if (row >= m) break;
      float out[VEC];
#pragma unroll
      for (int v = 0; v < VEC; ++v) {
        float acc = 0.0f;
#pragma unroll
        for (int kk = 0; kk < K; ++kk) acc = fmaf(x[u][kk], w[kk][v], acc);
        if (EPILOGUE != kSmallGemmNoEpilogue) acc += add[v];
        out[v] = EPILOGUE == kSmallGemmReluBias ? fmaxf(acc, 0.0f) : acc;
      }
      float* c_row = c + row * ldc + col;
      if (whole) {
        store_vec<VEC>(c_row, out);
      } else {
        for (int v = 0; v < VEC && col + v < n; ++v) c_row[v] = out[v];
      }
    }
  }
}

// First pass. Threads per block: ROWS_PER_BLOCK x ceil(wide / VEC). Dynamic shared
// memory: ROWS_PER_BLOCK x NARROW x ceil(wide / VEC) x VEC floats. Writes
// partial[blockIdx.x][i][j] (NARROW x wide, row stride wide).
template <class T, int NARROW, int ROWS_PER_BLOCK, int VEC, int UNROLL>
__global__ void small_gemm_reduce(const T* __restrict__ x, int64_t ldx, const T* __restrict__ y, int64_t ldy,
                                  float* __restrict__ partial, int64_t m, int wide) {
  extern __shared__ float group_sums[];
  const int per_row = (wide + VEC - 1) / VEC;
  const int slice = threadIdx.x % per_row;
  const int group = threadIdx.x / per_row;
  const int col = slice * VEC;
  const bool whole = col + VEC <= wide;
  const int64_t chunk = (m + gridDim.x - 1) / gridDim.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * chunk;
  const int64_t end = begin + chunk < m ? begin + chunk : m;
  float acc[NARROW][VEC];
#pragma unroll
  for (int i = 0; i < NARROW; ++i)
#pragma unroll
    for (int v = 0; v < VEC; ++v) acc[i][v] = 0.0f;
  for (int64_t first = begin + group; first < end; first += ROWS_PER_BLOCK * UNROLL) {
    float yv[UNROLL][VEC];
    float xv[UNROLL][NARROW];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int64_t row = first + u * ROWS_PER_BLOCK;
      const bool in = row < end;
      if (in && whole) {
        load_vec<VEC>(y + row * ldy + col, yv[u]);
      } else {
#pragma unroll
        for (int v = 0; v < VEC; ++v) yv[u][v] = in && col + v < wide ? to_float(y[row * ldy + col + v]) : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < NARROW; ++i) xv[u][i] = in ? to_float(x[row * ldx + i]) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int i = 0; i < NARROW; ++i)
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc[i][v] = fmaf(xv[u][i], yv[u][v], acc[i][v]);
  }
  // The row groups' sums, added in group order.
  const int padded_wide = per_row * VEC;
  if (ROWS_PER_BLOCK > 1) {
#pragma unroll
    for (int i = 0; i < NARROW; ++i)
#pragma unroll
      for (int v = 0; v < VEC; ++v) group_sums[(group * NARROW + i) * padded_wide + col + v] = acc[i][v];
    __syncthreads();
    if (group != 0) return;
#pragma unroll
    for (int i = 0; i < NARROW; ++i)
#pragma unroll
      for (int v = 0; v < VEC; ++v) {
        float s = group_sums[i * padded_wide + col + v];
        for (int g = 1; g < ROWS_PER_BLOCK; ++g) s += group_sums[(g * NARROW + i) * padded_wide + col + v];
        acc[i][v] = s;
      }
  }
  float* out = partial + static_cast<int64_t>(blockIdx.x) * NARROW * wide;
#pragma unroll
  for (int i = 0; i < NARROW; ++i)
#pragma unroll
    for (int v = 0; v < VEC; ++v)
      if (col + v < wide) out[i * wide + col + v] = acc[i][v];
}

// Second pass: one thread per output (i, j) adds the `chunks` partials in chunk order and
// writes C: c[i * ldc + j] when the narrow operand is A (C = narrow^T wide), else
// c[j * ldc + i] (C = wide^T narrow).
__global__ void small_gemm_reduce_finish(const float* __restrict__ partial, int chunks, int narrow, int wide,
                                         float* __restrict__ c, int64_t ldc, bool narrow_is_a) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= narrow * wide) return;
  const int i = e / wide, j = e - i * wide;
  float s = 0.0f;
  for (int p = 0; p < chunks; ++p) s += partial[static_cast<int64_t>(p) * narrow * wide + e];
  c[narrow_is_a ? static_cast<int64_t>(i) * ldc + j : static_cast<int64_t>(j) * ldc + i] = s;
}

}  // namespace hetrec::kernels
