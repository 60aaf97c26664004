#include "kernels/dot_interaction.h"

#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/kernel_attributes.h"
#include "kernels/dot_interaction_kernel.cuh"
#include "kernels/dot_interaction_tuned.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

// The built-in forward variant (kDefaultDotForwardVariant): 256 threads, one sample per
// block, rows padded by one float so that threads reading the same element of different
// features fall into different banks. The backward uses the same padding.
constexpr int kThreads = kDefaultDotForwardVariant.block_threads;
constexpr int kSamplesPerBlock = kDefaultDotForwardVariant.samples_per_block;
constexpr int kRowPad = kDefaultDotForwardVariant.row_pad;
// Above the default 48 KB of dynamic shared memory a kernel must opt in.
constexpr std::size_t kDefaultSharedLimit = 48 * 1024;

// Shared memory: the features (F rows, padded) then the symmetric pair-gradient matrix G
// (F x F): G[i][j] = G[j][i] = dout of pair (i, j), G[i][i] = 2 dout of (i, i) or 0.
__global__ void __launch_bounds__(kThreads)
    dot_backward_kernel(const float* __restrict__ features, int64_t feature_stride, const float* __restrict__ dout,
                        int64_t dout_stride, float* __restrict__ dfeatures, int64_t dfeature_stride, int num_features,
                        int dim, bool self) {
  extern __shared__ float dynamic_shared[];
  const int padded = dim + kRowPad;
  float* x = dynamic_shared;
  float* g = dynamic_shared + num_features * padded;
  const int64_t b = blockIdx.x;
  dot_load_features(x, features + b * feature_stride, num_features, dim, padded);
  const float* go = dout + b * dout_stride;
  for (int e = threadIdx.x; e < num_features * num_features; e += blockDim.x) g[e] = 0.0f;
  __syncthreads();
  const int pairs = self ? num_features * (num_features + 1) / 2 : num_features * (num_features - 1) / 2;
  for (int p = threadIdx.x; p < pairs; p += blockDim.x) {
    int i = 0, j = 0;
    dot_pair_of(p, self, i, j);
    const float v = go[dim + p];
    if (i == j) {
      g[i * num_features + i] = 2.0f * v;
    } else {
      g[i * num_features + j] = v;
      g[j * num_features + i] = v;
    }
  }
  __syncthreads();
  float* dst = dfeatures + b * dfeature_stride;
  for (int e = threadIdx.x; e < num_features * dim; e += blockDim.x) {
    const int i = e / dim;
    const int k = e - i * dim;
    float acc = i == 0 ? go[k] : 0.0f;
    for (int j = 0; j < num_features; ++j) acc = fmaf(g[i * num_features + j], x[j * padded + k], acc);
    dst[i * dim + k] = acc;
  }
}

template <class Kernel>
void allow_shared(Kernel kernel, std::size_t bytes) {
  if (bytes > kDefaultSharedLimit) gpu::allow_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), bytes);
}

void check_shape(const DotInteractionShape& s) {
  if (s.num_features <= 0 || s.dim <= 0 || s.batch < 0)
    throw InternalError("dot interaction: bad shape (features " + std::to_string(s.num_features) + ", dim " +
                        std::to_string(s.dim) + ")");
}

}  // namespace

void dot_interaction_forward(const DotInteractionShape& shape, const float* features, int64_t feature_stride,
                             float* out, int64_t out_stride, gpu::stream_t stream, const TunedDotForward* tuned) {
  if (tuned) return tuned->launch(shape, features, feature_stride, out, out_stride, stream);
  check_shape(shape);
  if (shape.batch == 0) return;
  const std::size_t smem = dot_forward_shared_bytes(shape.num_features, shape.dim, kDefaultDotForwardVariant);
  allow_shared(dot_forward_kernel<kThreads, kSamplesPerBlock, kRowPad>, smem);
  const unsigned grid = grid_for(shape.batch, kSamplesPerBlock);
  dot_forward_kernel<kThreads, kSamplesPerBlock, kRowPad><<<grid, kThreads, smem, stream>>>(
      features, feature_stride, out, out_stride, shape.batch, shape.num_features, shape.dim, shape.self);
  HETREC_GPU_CHECK_LAUNCH("dot_forward_kernel");
}

void dot_interaction_backward(const DotInteractionShape& shape, const float* features, int64_t feature_stride,
                              const float* dout, int64_t dout_stride, float* dfeatures, int64_t dfeature_stride,
                              gpu::stream_t stream) {
  check_shape(shape);
  if (shape.batch == 0) return;
  const std::size_t smem = (static_cast<std::size_t>(shape.num_features) * (shape.dim + kRowPad) +
                            static_cast<std::size_t>(shape.num_features) * shape.num_features) *
                           sizeof(float);
  allow_shared(dot_backward_kernel, smem);
  dot_backward_kernel<<<grid_for(shape.batch, 1), kThreads, smem, stream>>>(
      features, feature_stride, dout, dout_stride, dfeatures, dfeature_stride, shape.num_features, shape.dim,
      shape.self);
  HETREC_GPU_CHECK_LAUNCH("dot_backward_kernel");
}

}  // namespace hetrec::kernels
