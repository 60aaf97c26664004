#pragma once
// Dense optimizers as one fused pass over flat fp32 buffers (every dense parameter of a
// model lies in one buffer, its gradient and state slots in parallel buffers): SGD,
// Adagrad and Adam with the arithmetic of optim/dense_optimizer.h (torch.optim's
// single-tensor updates) operation for operation, so the device and host agree bit for
// bit on equal inputs. The per-step scalars come from device memory (StepScalars); no
// element changes when skip_update is set.
//
// param_bf16 (optional, n 16-bit patterns): the bf16 copy of the parameters that bf16
// GEMMs read. When given, the kernel also stores bf16(param) (round to nearest even)
// after the update, in the same pass.
#include <cstdint>

#include "gpu/platform.h"
#include "kernels/step_scalars.h"

namespace hetrec::kernels {

// param += dense_neg_lr * grad.
void dense_sgd(float* param, const float* grad, int64_t n, const StepScalars* scalars, gpu::stream_t stream,
               uint16_t* param_bf16 = nullptr);

// sum += g * g; param += dense_neg_lr * g / (sqrt(sum) + float(eps)).
void dense_adagrad(float* param, const float* grad, float* sum, int64_t n, double eps, const StepScalars* scalars,
                   gpu::stream_t stream, uint16_t* param_bf16 = nullptr);

// torch.optim.Adam with the bias corrections of the scalars' step.
void dense_adam(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n, double beta1,
                double beta2, double eps, const StepScalars* scalars, gpu::stream_t stream,
                uint16_t* param_bf16 = nullptr);

}  // namespace hetrec::kernels
