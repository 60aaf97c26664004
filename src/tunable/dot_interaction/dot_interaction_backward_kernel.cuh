#pragma once
// The DLRM dot interaction's backward kernel, on its own so that one source serves nvcc
// (the built-in instantiation, tunable/dot_interaction/dot_interaction.cu) and NVRTC (other
// instantiations at run time, tunable/dot_interaction/dot_interaction_backward_tuned.h). Tunable knobs
// are template arguments:
//   BLOCK_THREADS      threads per block (also the launch bound)
//   SAMPLES_PER_BLOCK  samples whose features and pair gradients one block stages in
//                      shared memory
//   ROW_PAD            floats of padding after each staged feature row and each row of
//                      the pair-gradient matrix: when a warp's threads work on different
//                      feature rows they read different rows of that matrix, which with
//                      a row stride that is a multiple of the bank count share one bank
//   ROWS_PER_THREAD    feature rows whose gradient each thread accumulates at one
//                      column: each staged feature element read from shared memory
//                      serves that many outputs
#include <cstdint>

#include "gpu/platform.h"
#include "tunable/dot_interaction/dot_interaction_kernel.cuh"

namespace hetrec::kernels {

// Block b handles samples b * SAMPLES_PER_BLOCK ... (fewer in the last block). Dynamic
// shared memory per sample: the features (F rows of D + ROW_PAD floats), then the
// symmetric pair-gradient matrix G (F rows of F + ROW_PAD floats): G[i][j] = G[j][i] =
// dout of pair (i, j), G[i][i] = 2 dout of (i, i) with self pairs, else 0. Thread item
// (sample, row group, column k) accumulates dfeatures[i][k] = [i == 0] dout[k] +
// sum_j G[i][j] x[j][k], j ascending, for the ROWS_PER_THREAD rows i of its group: the
// summation order of every output is the same for every variant.
template <int BLOCK_THREADS, int SAMPLES_PER_BLOCK, int ROW_PAD, int ROWS_PER_THREAD>
__global__ void __launch_bounds__(BLOCK_THREADS)
    dot_backward_kernel(const float* __restrict__ features, int64_t feature_stride, const float* __restrict__ dout,
                        int64_t dout_stride, float* __restrict__ dfeatures, int64_t dfeature_stride, int64_t batch,
                        int num_features, int dim, bool self) {
  extern __shared__ float dynamic_shared[];
  const int padded = dim + ROW_PAD;
  const int g_stride = num_features + ROW_PAD;
  const int per_sample = num_features * padded + num_features * g_stride;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * SAMPLES_PER_BLOCK;
  const int samples = batch - first < SAMPLES_PER_BLOCK ? static_cast<int>(batch - first) : SAMPLES_PER_BLOCK;
  for (int s = 0; s < samples; ++s) {
    float* stage = dynamic_shared + s * per_sample;
    dot_load_features(stage, features + (first + s) * feature_stride, num_features, dim, padded);
    float* g = stage + num_features * padded;
    for (int e = threadIdx.x; e < num_features * g_stride; e += BLOCK_THREADS) g[e] = 0.0f;
  }
  __syncthreads();
  const int pairs = self ? num_features * (num_features + 1) / 2 : num_features * (num_features - 1) / 2;
  for (int q = threadIdx.x; q < samples * pairs; q += BLOCK_THREADS) {
    const int s = q / pairs;
    const int p = q - s * pairs;
    int i = 0, j = 0;
    dot_pair_of(p, self, i, j);
    float* g = dynamic_shared + s * per_sample + num_features * padded;
    const float v = dout[(first + s) * dout_stride + dim + p];
    if (i == j) {
      g[i * g_stride + i] = 2.0f * v;
    } else {
      g[i * g_stride + j] = v;
      g[j * g_stride + i] = v;
    }
  }
  __syncthreads();
  const int groups = (num_features + ROWS_PER_THREAD - 1) / ROWS_PER_THREAD;
  const int per_sample_items = groups * dim;
  for (int e = threadIdx.x; e < samples * per_sample_items; e += BLOCK_THREADS) {
    const int s = e / per_sample_items;
    const int rest = e - s * per_sample_items;
    const int group = rest / dim;
    const int k = rest - group * dim;
    const int row0 = group * ROWS_PER_THREAD;
    const float* x = dynamic_shared + s * per_sample;
    const float* g = x + num_features * padded;
    const float* go = dout + (first + s) * dout_stride;
    float acc[ROWS_PER_THREAD];
    const float* g_row[ROWS_PER_THREAD];
#pragma unroll
    for (int r = 0; r < ROWS_PER_THREAD; ++r) {
      const int i = row0 + r < num_features ? row0 + r : num_features - 1;  // rows past F: read, never written
      acc[r] = row0 + r == 0 ? go[k] : 0.0f;
      g_row[r] = g + i * g_stride;
    }
    for (int j = 0; j < num_features; ++j) {
      const float xv = x[j * padded + k];
#pragma unroll
      for (int r = 0; r < ROWS_PER_THREAD; ++r) acc[r] = fmaf(g_row[r][j], xv, acc[r]);
    }
    float* dst = dfeatures + (first + s) * dfeature_stride;
#pragma unroll
    for (int r = 0; r < ROWS_PER_THREAD; ++r)
      if (row0 + r < num_features) dst[(row0 + r) * dim + k] = acc[r];
  }
}

}  // namespace hetrec::kernels
