#include "kernels/bce_loss.h"

#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

constexpr int kThreads = 256;

__device__ inline double sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + exp(-x));
  const double e = exp(x);
  return e / (1.0 + e);
}

// One block per chunk: each thread sums a strided share, then a fixed-shape tree.
__global__ void __launch_bounds__(kThreads)
    bce_chunk_kernel(const float* __restrict__ logits, int64_t logit_stride, const float* __restrict__ labels,
                     int64_t n, float* __restrict__ grad, int64_t grad_stride, double* __restrict__ partial,
                     const float* __restrict__ grad_scale, int64_t mean_over) {
  __shared__ double sums[kThreads];
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * kBceChunk;
  const int64_t end = begin + kBceChunk < n ? begin + kBceChunk : n;
  const double inv_mean_over = 1.0 / static_cast<double>(mean_over);
  const double scale = grad_scale ? static_cast<double>(*grad_scale) : 1.0;
  double sum = 0.0;
  for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
    const double x = logits[i * logit_stride];
    const double y = labels[i];
    sum += fmax(x, 0.0) - x * y + log1p(exp(-fabs(x)));
    if (grad) grad[i * grad_stride] = static_cast<float>((sigmoid(x) - y) * inv_mean_over * scale);
  }
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

__global__ void bce_total_kernel(const double* __restrict__ partial, int64_t chunks, int64_t mean_over, double* loss,
                                 int32_t* nonfinite) {
  double total = 0.0;
  for (int64_t c = 0; c < chunks; ++c) total += partial[c];
  const double mean = total * (1.0 / static_cast<double>(mean_over));
  *loss = mean;
  if (nonfinite && !isfinite(mean)) *nonfinite = 1;
}

}  // namespace

void bce_with_logits(const float* logits, int64_t logit_stride, const float* labels, int64_t n, float* grad,
                     int64_t grad_stride, double* loss, int32_t* nonfinite, void* workspace,
                     std::size_t workspace_bytes, gpu::stream_t stream, const float* grad_scale, int64_t mean_over) {
  if (n <= 0) throw InternalError("bce_with_logits over " + std::to_string(n) + " samples");
  if (mean_over < 0) throw InternalError("bce_with_logits: mean over " + std::to_string(mean_over) + " samples");
  if (mean_over == 0) mean_over = n;
  if (workspace_bytes < bce_loss_workspace_bytes(n)) throw InternalError("bce_with_logits: workspace too small");
  const int64_t chunks = ceil_div(n, kBceChunk);
  auto* partial = static_cast<double*>(workspace);
  bce_chunk_kernel<<<grid_for(chunks, 1), kThreads, 0, stream>>>(logits, logit_stride, labels, n, grad, grad_stride,
                                                                partial, grad_scale, mean_over);
  HETREC_GPU_CHECK_LAUNCH("bce_chunk_kernel");
  bce_total_kernel<<<1, 1, 0, stream>>>(partial, chunks, mean_over, loss, nonfinite);
  HETREC_GPU_CHECK_LAUNCH("bce_total_kernel");
}

}  // namespace hetrec::kernels
