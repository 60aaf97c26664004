#pragma once
// The values that change from one training step to the next (learning rates, the step
// number) and the device-written "skip this update" flag. Kernels read them from device
// memory rather than from launch arguments, so that a training step captured once as a
// graph replays with each step's own values (the host refreshes them with one small
// copy at the head of the step).
#include <cstdint>

namespace hetrec::kernels {

struct StepScalars {
  float sparse_lr = 0.0f;
  float dense_neg_lr = 0.0f;                 // SGD and Adagrad: float(-lr)
  float adam_neg_step_size = 0.0f;           // float(-(lr / (1 - beta1^t)))
  float adam_bias_correction2_sqrt = 1.0f;   // float(sqrt(1 - beta2^t))
  int64_t step = 0;                          // 0-based: keys the stochastic rounding
  int32_t skip_update = 0;                   // set on the device when the loss is not finite
};

// Host side: the scalars of 0-based step `step` (Adam's update number is step + 1), with
// the double-precision arithmetic of optim/dense_optimizer.cpp.
StepScalars make_step_scalars(double sparse_lr, double dense_lr, double beta1, double beta2, int64_t step);

}  // namespace hetrec::kernels
