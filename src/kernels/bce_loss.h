#pragma once
// Mean binary cross-entropy with logits, fused with its gradient (the loss of every
// model): one pass over the logits.
#include <cstddef>
#include <cstdint>

#include "gpu/platform.h"
#include "kernels/bce_loss_geometry.h"  // bce_loss_workspace_bytes

namespace hetrec::kernels {

// *loss = mean_i [max(x_i, 0) - x_i y_i + log1p(exp(-|x_i|))] (double, on the device),
// grad[i] = (sigmoid(x_i) - y_i) / n (unless grad is null), as nn/bce_loss.h, in double
// per element. Partial sums run over fixed 4096-sample chunks combined in chunk order:
// the same value for any launch. logits and grad may have a row stride (a column of a
// wider matrix); labels are contiguous. If nonfinite is not null, *nonfinite is set to 1
// when the loss is NaN or infinite and left as it is otherwise (it is the update
// kernels' skip flag, which other checks of the step may have raised already).
// grad_scale (optional, device memory): the gradient is multiplied by *grad_scale (the
// loss scale of fp16 dense compute; a power of two, so the product is exact).
// mean_over (0: n): the loss and the gradient are divided by mean_over instead of n, so
// that a rank holding n samples of a global batch of mean_over computes its share of the
// global mean (the ranks' losses then add up to it).
void bce_with_logits(const float* logits, int64_t logit_stride, const float* labels, int64_t n, float* grad,
                     int64_t grad_stride, double* loss, int32_t* nonfinite, void* workspace,
                     std::size_t workspace_bytes, gpu::stream_t stream, const float* grad_scale = nullptr,
                     int64_t mean_over = 0);

}  // namespace hetrec::kernels
