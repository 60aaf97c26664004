#pragma once
// The DCNv2 cross net's element-wise passes (tunable/cross_net/cross_net.h) on their own, so that
// one source serves nvcc (the built-in instantiations, tunable/cross_net/cross_net.cu) and NVRTC
// (other instantiations at run time, tunable/cross_net/cross_net_tuned.h). Tunable knobs are
// template arguments:
//   forward  VEC            elements per access (one vector of each operand)
//            ITEMS          vectors per thread, BLOCK_THREADS apart (the unroll)
//            BLOCK_THREADS  threads per block (also the launch bound)
//   backward VEC            consecutive columns per thread (one vector of each operand)
//            COL_THREADS    threads across the columns of a block
//            ROW_GROUPS     groups of COL_THREADS threads that split a chunk's rows into
//                           consecutive ranges; their column partials are staged in shared
//                           memory and added in group order
//            CHUNK_ROWS     rows of one block (one chunk of the column sums)
// Vector accesses need every operand aligned to the vector (and, for the backward, a row
// width that VEC divides); the launcher says whether they are (`vector_ok`), and without
// it every element is read and written on its own. The forward's elements past the last
// whole vector (fewer than VEC) are done one by one by the first block.
#include <cstdint>

#include "gpu/platform.h"
#include "kernels/row_vector.cuh"

namespace hetrec::kernels {

// ---- forward: v = x0 * z + x; out = v (fp32, skipped when null), out_op = v in Op ----

template <class Op>
__device__ inline void cross_forward_element(const float* __restrict__ x0, const float* __restrict__ x,
                                             const Op* __restrict__ z, float* __restrict__ out,
                                             Op* __restrict__ out_op, int64_t e) {
  const float v = fmaf(x0[e], to_float(z[e]), x[e]);
  if (out) out[e] = v;
  if (out_op) out_op[e] = from_float<Op>(v);
}

// Block b covers vectors [b * BLOCK_THREADS * ITEMS, (b + 1) * BLOCK_THREADS * ITEMS).
template <class Op, int VEC, int ITEMS, int BLOCK_THREADS>
__global__ void __launch_bounds__(BLOCK_THREADS)
    cross_forward_kernel(const float* __restrict__ x0, const float* __restrict__ x, const Op* __restrict__ z,
                         float* __restrict__ out, Op* __restrict__ out_op, int64_t elements, bool vector_ok) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * BLOCK_THREADS * ITEMS + threadIdx.x;
  if (!vector_ok) {
    // Element by element, the same elements as the vector path, neighbouring threads on
    // neighbouring elements.
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int64_t base = (static_cast<int64_t>(blockIdx.x) * BLOCK_THREADS * ITEMS + i * BLOCK_THREADS) * VEC;
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const int64_t e = base + k * BLOCK_THREADS + threadIdx.x;
        if (e < elements) cross_forward_element(x0, x, z, out, out_op, e);
      }
    }
    return;
  }
  const int64_t vectors = elements / VEC;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int64_t v = first + static_cast<int64_t>(i) * BLOCK_THREADS;
    if (v >= vectors) break;
    const int64_t e = v * VEC;
    float a[VEC], b[VEC], c[VEC];
    load_vec<VEC>(x0 + e, a);
    load_vec<VEC>(z + e, c);
    load_vec<VEC>(x + e, b);
#pragma unroll
    for (int k = 0; k < VEC; ++k) a[k] = fmaf(a[k], c[k], b[k]);
    if (out) store_vec<VEC>(out + e, a);
    if (out_op) store_vec<VEC>(out_op + e, a);
  }
  const int64_t tail = vectors * VEC;
  if (blockIdx.x == 0 && threadIdx.x < elements - tail) cross_forward_element(x0, x, z, out, out_op, tail + threadIdx.x);
}

// ---- backward (tunable/cross_net/cross_net.h, CrossBackward) ----
// One pass of tunable/cross_net/cross_backward_schedule.h: G^(0) = g, G^(s+1) = G^(s) + h_s for
// the `terms` chain terms; dz = G x0 with G = G^(terms) (in Op, returned in fp32 for the
// column sums); the direct part starts from acc (accumulate) and adds z_j G^(j + first) for
// the `direct_terms` z's, each as one fmaf (the first as a product when nothing precedes
// it); a checkpoint writes g = G and acc = direct, the bottom pass dx0 = direct + G.

template <class Op>
struct CrossBackwardOperands {
  float* g;
  const Op* h[3];
  int terms;
  const float* x0;
  const Op* z[4];
  int direct_terms;
  int direct_first;
  float* acc;
  bool accumulate;
  bool checkpoint;
  float* dx0;
  Op* dz;
};

// One element (VEC = 1) or VEC consecutive vector-aligned elements at e; d gets dz in fp32.
// The loop over the terms is unrolled, so every operand pointer is picked by a constant
// index (a run-time index would put the pointer arrays in local memory).
template <class Op, int VEC, bool VECTOR>
__device__ inline void cross_backward_elements(const CrossBackwardOperands<Op>& a, int64_t e, float (&d)[VEC]) {
  float gv[VEC], xv[VEC], direct[VEC];
  const auto load32 = [e](const float* p, float (&out)[VEC]) {
    if constexpr (VECTOR) load_vec<VEC>(p + e, out);
    else out[0] = p[e];
  };
  const auto loadop = [e](const Op* p, float (&out)[VEC]) {
    if constexpr (VECTOR) load_vec<VEC>(p + e, out);
    else out[0] = to_float(p[e]);
  };
  const auto store32 = [e](float* p, const float (&in)[VEC]) {
    if constexpr (VECTOR) store_vec<VEC>(p + e, in);
    else p[e] = in[0];
  };
  load32(a.g, gv);
  bool has_direct = a.accumulate;
  if (has_direct) load32(a.acc, direct);
#pragma unroll
  for (int s = 0; s <= 3; ++s) {
    if (s > a.terms) break;
    const int j = s - a.direct_first;  // the z paired with G^(s)
    if (j >= 0 && j < a.direct_terms) {
      float zv[VEC];
      loadop(a.direct_first == 0 ? a.z[s] : a.z[s > 0 ? s - 1 : 0], zv);
      if (has_direct) {
#pragma unroll
        for (int k = 0; k < VEC; ++k) direct[k] = fmaf(gv[k], zv[k], direct[k]);
      } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) direct[k] = gv[k] * zv[k];
      }
      has_direct = true;
    }
    if (s < 3 && s < a.terms) {
      float hv[VEC];
      loadop(a.h[s < 3 ? s : 0], hv);
#pragma unroll
      for (int k = 0; k < VEC; ++k) gv[k] += hv[k];
    }
  }
  load32(a.x0, xv);
#pragma unroll
  for (int k = 0; k < VEC; ++k) d[k] = gv[k] * xv[k];
  if constexpr (VECTOR) store_vec<VEC>(a.dz + e, d);
  else a.dz[e] = from_float<Op>(d[0]);
  if (a.checkpoint) {
    store32(a.g, gv);
    if (has_direct) store32(a.acc, direct);
  }
  if (a.dx0) {
    if (has_direct) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) direct[k] = direct[k] + gv[k];
      store32(a.dx0, direct);
    } else {
      store32(a.dx0, gv);
    }
  }
}

template <class Op>
__device__ inline float cross_backward_element(const CrossBackwardOperands<Op>& a, int64_t e) {
  float d[1];
  cross_backward_elements<Op, 1, false>(a, e, d);
  return d[0];
}

// Block (x, y) covers columns [x * COL_THREADS * VEC, ...) of chunk y (rows
// [y * CHUNK_ROWS, (y + 1) * CHUNK_ROWS)) and writes partial[y * cols + c], the sum of dz
// over the chunk's rows of column c: each thread sums its row range in row order, then
// the groups' sums are added in group order. With ROW_GROUPS = 1 that is one thread per
// column walking the chunk in row order (kernels/column_chunks.cuh's order).
template <class Op, int VEC, int COL_THREADS, int ROW_GROUPS, int CHUNK_ROWS>
__global__ void __launch_bounds__(COL_THREADS * ROW_GROUPS)
    cross_backward_chunk_kernel(float* __restrict__ g, const Op* h0, const Op* h1, const Op* h2, int terms,
                                const float* __restrict__ x0, const Op* z0, const Op* z1, const Op* z2, const Op* z3,
                                int direct_terms, int direct_first, float* __restrict__ acc, bool accumulate,
                                bool checkpoint, float* __restrict__ dx0, Op* __restrict__ dz, int64_t rows,
                                int64_t cols, float* __restrict__ partial, bool vector_ok) {
  const CrossBackwardOperands<Op> a{g,  {h0, h1, h2}, terms,      x0,  {z0, z1, z2, z3}, direct_terms, direct_first,
                                    acc, accumulate,  checkpoint, dx0, dz};
  constexpr int kGroupRows = CHUNK_ROWS / ROW_GROUPS;
  const int col_thread = ROW_GROUPS == 1 ? static_cast<int>(threadIdx.x) : static_cast<int>(threadIdx.x) % COL_THREADS;
  const int group = ROW_GROUPS == 1 ? 0 : static_cast<int>(threadIdx.x) / COL_THREADS;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * COL_THREADS * VEC + static_cast<int64_t>(col_thread) * VEC;
  const int64_t chunk = blockIdx.y;
  if constexpr (ROW_GROUPS == 1) {
    if (c0 >= cols) return;  // no block-wide barrier below to wait for this thread
  }
  const int64_t r_begin = chunk * CHUNK_ROWS + static_cast<int64_t>(group) * kGroupRows;
  const int64_t r_limit = r_begin + kGroupRows < rows ? r_begin + kGroupRows : rows;
  float sum[VEC];
#pragma unroll
  for (int k = 0; k < VEC; ++k) sum[k] = 0.0f;
  if constexpr (VEC == 1) {
    if (c0 < cols)
      for (int64_t r = r_begin; r < r_limit; ++r)
        sum[0] += cross_backward_element(a, r * cols + c0);
  } else if (vector_ok && c0 + VEC <= cols) {
    for (int64_t r = r_begin; r < r_limit; ++r) {
      float d[VEC];
      cross_backward_elements<Op, VEC, true>(a, r * cols + c0, d);
#pragma unroll
      for (int k = 0; k < VEC; ++k) sum[k] += d[k];
    }
  } else if (c0 < cols) {
    for (int64_t r = r_begin; r < r_limit; ++r)
#pragma unroll
      for (int k = 0; k < VEC; ++k)
        if (c0 + k < cols) sum[k] += cross_backward_element(a, r * cols + c0 + k);
  }
  if constexpr (ROW_GROUPS > 1) {
    __shared__ float staged[ROW_GROUPS - 1][COL_THREADS * VEC];
    if (group > 0)
#pragma unroll
      for (int k = 0; k < VEC; ++k) staged[group - 1][col_thread * VEC + k] = sum[k];
    __syncthreads();
    if (group > 0) return;
#pragma unroll
    for (int s = 0; s < ROW_GROUPS - 1; ++s)
#pragma unroll
      for (int k = 0; k < VEC; ++k) sum[k] += staged[s][col_thread * VEC + k];
  }
#pragma unroll
  for (int k = 0; k < VEC; ++k)
    if (c0 + k < cols) partial[chunk * cols + c0 + k] = sum[k];
}

}  // namespace hetrec::kernels
