#include "kernels/dense_optimizer.h"

#include <cmath>
#include <string>

#include "core/error.h"
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

// The 16-bit copy as the kernels see it: where, and whether fp16 (else bf16).
struct DeviceCopy {
  uint16_t* data;
  bool fp16;
};

// The updated value, and its 16-bit copy when the model keeps one.
__device__ inline void store(float* param, const DeviceCopy& copy, int64_t i, float value) {
  param[i] = value;
  if (copy.data) copy.data[i] = copy.fp16 ? gpu::f32_to_f16_bits(value) : gpu::f32_to_bf16_bits(value);
}

DeviceCopy device_copy(const ParamCopy& c) {
  if (c.data && c.type != DType::bf16 && c.type != DType::f16)
    throw InternalError("dense optimizer: the parameter copy must be bf16 or fp16, got " + std::string(dtype_name(c.type)));
  return DeviceCopy{c.data, c.type == DType::f16};
}

__global__ void __launch_bounds__(kThreads)
    sgd_kernel(float* __restrict__ param, const float* __restrict__ grad, int64_t n,
               const StepScalars* __restrict__ scalars, DeviceCopy copy) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n || scalars->skip_update) return;
  store(param, copy, i, param[i] + mul(scalars->dense_neg_lr, grad[i]));
}

__global__ void __launch_bounds__(kThreads)
    adagrad_kernel(float* __restrict__ param, const float* __restrict__ grad, float* __restrict__ sum, int64_t n,
                   float eps, const StepScalars* __restrict__ scalars, DeviceCopy copy) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n || scalars->skip_update) return;
  const float g = grad[i];
  const float s = sum[i] + mul(g, g);
  sum[i] = s;
  const float denom = sqrtf(s) + eps;
  store(param, copy, i, param[i] + mul(scalars->dense_neg_lr, g) / denom);
}

struct AdamConstants {
  float weight, beta2, one_minus_beta2, eps;
  bool small_weight;
};

__global__ void __launch_bounds__(kThreads)
    adam_kernel(float* __restrict__ param, const float* __restrict__ grad, float* __restrict__ exp_avg,
                float* __restrict__ exp_avg_sq, int64_t n, AdamConstants c, const StepScalars* __restrict__ scalars,
                DeviceCopy copy) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n || scalars->skip_update) return;
  const float g = grad[i];
  const float m0 = exp_avg[i];
  const float m = c.small_weight ? m0 + mul(c.weight, g - m0) : g - mul(g - m0, 1.0f - c.weight);  // lerp_
  exp_avg[i] = m;
  const float v = mul(exp_avg_sq[i], c.beta2) + mul(mul(c.one_minus_beta2, g), g);
  exp_avg_sq[i] = v;
  const float denom = sqrtf(v) / scalars->adam_bias_correction2_sqrt + c.eps;
  store(param, copy, i, param[i] + mul(scalars->adam_neg_step_size, m) / denom);
}

}  // namespace

void dense_sgd(float* param, const float* grad, int64_t n, const StepScalars* scalars, gpu::stream_t stream,
               const ParamCopy& copy) {
  if (n <= 0) return;
  sgd_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(param, grad, n, scalars, device_copy(copy));
  HETREC_GPU_CHECK_LAUNCH("sgd_kernel");
}

void dense_adagrad(float* param, const float* grad, float* sum, int64_t n, double eps, const StepScalars* scalars,
                   gpu::stream_t stream, const ParamCopy& copy) {
  if (n <= 0) return;
  adagrad_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(param, grad, sum, n, static_cast<float>(eps), scalars,
                                                                 device_copy(copy));
  HETREC_GPU_CHECK_LAUNCH("adagrad_kernel");
}

void dense_adam(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n, double beta1,
                double beta2, double eps, const StepScalars* scalars, gpu::stream_t stream, const ParamCopy& copy) {
  if (n <= 0) return;
  AdamConstants c{};
  c.weight = static_cast<float>(1.0 - beta1);
  c.beta2 = static_cast<float>(beta2);
  c.one_minus_beta2 = static_cast<float>(1.0 - beta2);
  c.eps = static_cast<float>(eps);
  c.small_weight = std::abs(c.weight) < 0.5f;  // at::lerp's switch between its two formulas
  adam_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(param, grad, exp_avg, exp_avg_sq, n, c, scalars,
                                                                              device_copy(copy));
  HETREC_GPU_CHECK_LAUNCH("adam_kernel");
}

}  // namespace hetrec::kernels
