#pragma once
// Dense optimizers as one fused pass over flat fp32 buffers (every dense parameter of a
// model lies in one buffer, its gradient and state slots in parallel buffers): SGD,
// Adagrad and Adam with the arithmetic of optim/dense_optimizer.h (torch.optim's
// single-tensor updates) operation for operation, so the device and host agree bit for
// bit on equal inputs. The per-step scalars come from device memory (StepScalars); no
// element changes when skip_update is set.
//
// copy (optional): the 16-bit copy of the parameters (n bf16 or fp16 patterns) that the
// 16-bit GEMMs read. When given, the kernel also stores the rounded (nearest even)
// updated value, in the same pass.
#include <cstdint>

#include "core/dtype.h"
#include "gpu/platform.h"
#include "kernels/step_scalars.h"

namespace hetrec::kernels {

struct ParamCopy {
  uint16_t* data = nullptr;  // none when null
  DType type = DType::bf16;  // bf16 or f16
};

// param += dense_neg_lr * grad.
void dense_sgd(float* param, const float* grad, int64_t n, const StepScalars* scalars, gpu::stream_t stream,
               const ParamCopy& copy = {});

// sum += g * g; param += dense_neg_lr * g / (sqrt(sum) + float(eps)).
void dense_adagrad(float* param, const float* grad, float* sum, int64_t n, double eps, const StepScalars* scalars,
                   gpu::stream_t stream, const ParamCopy& copy = {});

// torch.optim.Adam with the bias corrections of the scalars' step.
void dense_adam(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n, double beta1,
                double beta2, double eps, const StepScalars* scalars, gpu::stream_t stream,
                const ParamCopy& copy = {});

}  // namespace hetrec::kernels
