#include "kernels/dense_optimizer.h"

#include <cmath>

#include "gpu/check.h"
#include "gpu/fp_ops.h"
#include "gpu/half.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

constexpr int kThreads = 256;

// Products rounded on their own (never fused into the following add), as the host's
// plain fp32 arithmetic rounds them.
__device__ inline float mul(float a, float b) { return gpu::mul_rn(a, b); }

// The updated value, and its bf16 copy when the model keeps one.
__device__ inline void store(float* param, uint16_t* param_bf16, int64_t i, float value) {
  param[i] = value;
  if (param_bf16) param_bf16[i] = gpu::f32_to_bf16_bits(value);
}

__global__ void __launch_bounds__(kThreads)
    sgd_kernel(float* __restrict__ param, const float* __restrict__ grad, int64_t n,
               const StepScalars* __restrict__ scalars, uint16_t* __restrict__ param_bf16) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n || scalars->skip_update) return;
  store(param, param_bf16, i, param[i] + mul(scalars->dense_neg_lr, grad[i]));
}

__global__ void __launch_bounds__(kThreads)
    adagrad_kernel(float* __restrict__ param, const float* __restrict__ grad, float* __restrict__ sum, int64_t n,
                   float eps, const StepScalars* __restrict__ scalars, uint16_t* __restrict__ param_bf16) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n || scalars->skip_update) return;
  const float g = grad[i];
  const float s = sum[i] + mul(g, g);
  sum[i] = s;
  const float denom = sqrtf(s) + eps;
  store(param, param_bf16, i, param[i] + mul(scalars->dense_neg_lr, g) / denom);
}

struct AdamConstants {
  float weight, beta2, one_minus_beta2, eps;
  bool small_weight;
};

__global__ void __launch_bounds__(kThreads)
    adam_kernel(float* __restrict__ param, const float* __restrict__ grad, float* __restrict__ exp_avg,
                float* __restrict__ exp_avg_sq, int64_t n, AdamConstants c, const StepScalars* __restrict__ scalars,
                uint16_t* __restrict__ param_bf16) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n || scalars->skip_update) return;
  const float g = grad[i];
  const float m0 = exp_avg[i];
  const float m = c.small_weight ? m0 + mul(c.weight, g - m0) : g - mul(g - m0, 1.0f - c.weight);  // lerp_
  exp_avg[i] = m;
  const float v = mul(exp_avg_sq[i], c.beta2) + mul(mul(c.one_minus_beta2, g), g);
  exp_avg_sq[i] = v;
  const float denom = sqrtf(v) / scalars->adam_bias_correction2_sqrt + c.eps;
  store(param, param_bf16, i, param[i] + mul(scalars->adam_neg_step_size, m) / denom);
}

}  // namespace

void dense_sgd(float* param, const float* grad, int64_t n, const StepScalars* scalars, gpu::stream_t stream,
               uint16_t* param_bf16) {
  if (n <= 0) return;
  sgd_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(param, grad, n, scalars, param_bf16);
  HETREC_GPU_CHECK_LAUNCH("sgd_kernel");
}

void dense_adagrad(float* param, const float* grad, float* sum, int64_t n, double eps, const StepScalars* scalars,
                   gpu::stream_t stream, uint16_t* param_bf16) {
  if (n <= 0) return;
  adagrad_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(param, grad, sum, n, static_cast<float>(eps), scalars,
                                                                 param_bf16);
  HETREC_GPU_CHECK_LAUNCH("adagrad_kernel");
}

void dense_adam(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n, double beta1,
                double beta2, double eps, const StepScalars* scalars, gpu::stream_t stream, uint16_t* param_bf16) {
  if (n <= 0) return;
  AdamConstants c{};
  c.weight = static_cast<float>(1.0 - beta1);
  c.beta2 = static_cast<float>(beta2);
  c.one_minus_beta2 = static_cast<float>(1.0 - beta2);
  c.eps = static_cast<float>(eps);
  c.small_weight = std::abs(c.weight) < 0.5f;  // at::lerp's switch between its two formulas
  adam_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(param, grad, exp_avg, exp_avg_sq, n, c, scalars,
                                                                              param_bf16);
  HETREC_GPU_CHECK_LAUNCH("adam_kernel");
}

}  // namespace hetrec::kernels
