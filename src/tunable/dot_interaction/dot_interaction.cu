#include "tunable/dot_interaction/dot_interaction.h"

#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/kernel_attributes.h"
#include "tunable/dot_interaction/dot_interaction_backward_kernel.cuh"
#include "tunable/dot_interaction/dot_interaction_backward_tuned.h"
#include "tunable/dot_interaction/dot_interaction_kernel.cuh"
#include "tunable/dot_interaction/dot_interaction_tuned.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

// The built-in forward variant (kDefaultDotForwardVariant): 256 threads, one sample per
// block, rows padded by one float so that threads reading the same element of different
// features fall into different banks.
constexpr int kThreads = kDefaultDotForwardVariant.block_threads;
constexpr int kSamplesPerBlock = kDefaultDotForwardVariant.samples_per_block;
constexpr int kRowPad = kDefaultDotForwardVariant.row_pad;
// The built-in backward variant (kDefaultDotBackwardVariant): 256 threads, one sample per
// block, rows padded by one float, one output per thread and item.
constexpr int kBackwardThreads = kDefaultDotBackwardVariant.block_threads;
constexpr int kBackwardSamplesPerBlock = kDefaultDotBackwardVariant.samples_per_block;
constexpr int kBackwardRowPad = kDefaultDotBackwardVariant.row_pad;
constexpr int kBackwardRowsPerThread = kDefaultDotBackwardVariant.rows_per_thread;
// Above the default 48 KB of dynamic shared memory a kernel must opt in.
constexpr std::size_t kDefaultSharedLimit = 48 * 1024;

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
                              gpu::stream_t stream, const TunedDotBackward* tuned) {
  if (tuned)
    return tuned->launch(shape, features, feature_stride, dout, dout_stride, dfeatures, dfeature_stride, stream);
  check_shape(shape);
  if (shape.batch == 0) return;
  const std::size_t smem = dot_backward_shared_bytes(shape.num_features, shape.dim, kDefaultDotBackwardVariant);
  allow_shared(dot_backward_kernel<kBackwardThreads, kBackwardSamplesPerBlock, kBackwardRowPad, kBackwardRowsPerThread>,
               smem);
  dot_backward_kernel<kBackwardThreads, kBackwardSamplesPerBlock, kBackwardRowPad, kBackwardRowsPerThread><<<grid_for(shape.batch, kBackwardSamplesPerBlock), kBackwardThreads, smem, stream>>>(
      features, feature_stride, dout, dout_stride, dfeatures, dfeature_stride, shape.batch, shape.num_features,
      shape.dim, shape.self);
  HETREC_GPU_CHECK_LAUNCH("dot_backward_kernel");
}

}  // namespace hetrec::kernels
