#include "kernels/loss_scale.h"

#include "core/error.h"
#include "gpu/check.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    unscale_kernel(float* __restrict__ g, int64_t rows, int64_t cols, int64_t ld, LossScaleState* state,
                   int32_t* skip) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= rows * cols) return;
  const int64_t r = i / cols;
  const int64_t c = i - r * cols;
  float* p = g + r * ld + c;
  const float v = *p * state->inv_scale;
  *p = v;
  // Every thread that finds one writes the same 1: no atomics needed.
  if (!isfinite(v)) {
    state->overflow = 1;
    *skip = 1;
  }
}

__global__ void update_kernel(LossScaleState* state, LossScaleRule rule) {
  float scale = state->scale;
  if (state->overflow) {
    scale = fmaxf(scale * rule.backoff, rule.min_scale);
    state->clean_steps = 0;
  } else if (++state->clean_steps >= rule.growth_interval) {
    scale = fminf(scale * rule.growth, rule.max_scale);
    state->clean_steps = 0;
  }
  state->scale = scale;
  state->inv_scale = 1.0f / scale;
}

}  // namespace

void unscale_and_check(float* g, int64_t rows, int64_t cols, int64_t ld, LossScaleState* state, int32_t* skip,
                       gpu::stream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  if (ld < cols) throw InternalError("unscale_and_check: leading dimension below the column count");
  unscale_kernel<<<grid_for(rows * cols, kThreads), kThreads, 0, stream>>>(g, rows, cols, ld, state, skip);
  HETREC_GPU_CHECK_LAUNCH("unscale_kernel");
}

void update_loss_scale(LossScaleState* state, const LossScaleRule& rule, gpu::stream_t stream) {
  if (rule.growth_interval < 1) throw InternalError("update_loss_scale: growth interval below 1");
  update_kernel<<<1, 1, 0, stream>>>(state, rule);
  HETREC_GPU_CHECK_LAUNCH("update_loss_scale");
}

}  // namespace hetrec::kernels
