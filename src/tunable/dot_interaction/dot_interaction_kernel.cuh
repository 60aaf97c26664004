#pragma once
// The DLRM dot interaction's forward kernel and the helpers its backward shares, on their
// own so that one source serves nvcc (the built-in instantiation,
// tunable/dot_interaction/dot_interaction.cu) and NVRTC (other instantiations at run time,
// tunable/dot_interaction/dot_interaction_tuned.h). Tunable knobs are template arguments:
//   BLOCK_THREADS      threads per block (also the launch bound)
//   SAMPLES_PER_BLOCK  samples whose features one block stages in shared memory
//   ROW_PAD            floats of padding after each staged feature row: with 0 and a row
//                      width that is a multiple of the bank count, threads reading element
//                      k of different rows hit one bank
#include <cstdint>

#include "gpu/platform.h"

namespace hetrec::kernels {

// Pair p of the lower triangle (i ascending, j ascending within i).
__device__ inline void dot_pair_of(int p, bool self, int& i, int& j) {
  // Row i starts at i(i-1)/2 (without the diagonal) or i(i+1)/2 (with it); invert with a
  // float square root, then fix the rounding by at most one step either way.
  const float pf = static_cast<float>(p);
  int r = self ? static_cast<int>((sqrtf(8.0f * pf + 1.0f) - 1.0f) * 0.5f)
               : static_cast<int>((sqrtf(8.0f * pf + 1.0f) + 1.0f) * 0.5f);
  auto start = [self](int row) { return self ? row * (row + 1) / 2 : row * (row - 1) / 2; };
  while (start(r) > p) --r;
  while (start(r + 1) <= p) ++r;
  i = r;
  j = p - start(r);
}

// Stages one sample's F x D features into shared rows of `padded` floats.
__device__ inline void dot_load_features(float* smem, const float* src, int num_features, int dim, int padded) {
  for (int e = threadIdx.x; e < num_features * dim; e += blockDim.x) {
    const int f = e / dim;
    smem[f * padded + (e - f * dim)] = src[e];
  }
}

// Block b handles samples b * SAMPLES_PER_BLOCK ... (fewer in the last block). Dynamic
// shared memory: SAMPLES_PER_BLOCK x F x (D + ROW_PAD) floats.
template <int BLOCK_THREADS, int SAMPLES_PER_BLOCK, int ROW_PAD>
__global__ void __launch_bounds__(BLOCK_THREADS)
    dot_forward_kernel(const float* __restrict__ features, int64_t feature_stride, float* __restrict__ out,
                       int64_t out_stride, int64_t batch, int num_features, int dim, bool self) {
  extern __shared__ float dynamic_shared[];
  const int padded = dim + ROW_PAD;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * SAMPLES_PER_BLOCK;
  const int samples = batch - first < SAMPLES_PER_BLOCK ? static_cast<int>(batch - first) : SAMPLES_PER_BLOCK;
  const int per_sample = num_features * padded;
  for (int s = 0; s < samples; ++s)
    dot_load_features(dynamic_shared + s * per_sample, features + (first + s) * feature_stride, num_features, dim,
                      padded);
  __syncthreads();
  for (int e = threadIdx.x; e < samples * dim; e += BLOCK_THREADS) {
    const int s = e / dim;
    out[(first + s) * out_stride + (e - s * dim)] = dynamic_shared[s * per_sample + (e - s * dim)];
  }
  const int pairs = self ? num_features * (num_features + 1) / 2 : num_features * (num_features - 1) / 2;
  for (int q = threadIdx.x; q < samples * pairs; q += BLOCK_THREADS) {
    const int s = q / pairs;
    const int p = q - s * pairs;
    int i = 0, j = 0;
    dot_pair_of(p, self, i, j);
    const float* xi = dynamic_shared + s * per_sample + i * padded;
    const float* xj = dynamic_shared + s * per_sample + j * padded;
    float acc = 0.0f;
    for (int k = 0; k < dim; ++k) acc = fmaf(xi[k], xj[k], acc);
    out[(first + s) * out_stride + dim + p] = acc;
  }
}

}  // namespace hetrec::kernels
