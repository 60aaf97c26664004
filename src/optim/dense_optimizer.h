#pragma once
// Optimizers of the dense (MLP, cross net) parameters on the CPU: SGD, Adagrad and Adam
// over flat fp32 buffers, with the arithmetic of torch.optim's single-tensor
// (foreach=False) implementations, operation by operation, so that a PyTorch run from
// the same state follows the same trajectory. No weight decay, momentum or lr decay.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/named_tensor.h"
#include "optim/optim_config.h"
#include "optim/dense_param.h"

namespace hetrec::inline optim {

// ---- Element-wise updates of n values (scalars in double, as torch passes them) ----

// torch.optim.SGD: p += -lr * g.
void sgd_update(float* param, const float* grad, int64_t n, double lr);
// torch.optim.Adagrad: sum += g * g; p += -lr * g / (sqrt(sum) + eps).
void adagrad_update(float* param, const float* grad, float* sum, int64_t n, double lr, double eps);

struct AdamHyper {
  double lr = 0.001;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};
// torch.optim.Adam at update number `step` (1-based): m = lerp(m, g, 1 - beta1);
// v = beta2 v + (1 - beta2) g g; p += -(lr / (1 - beta1^step)) m /
// (sqrt(v) / sqrt(1 - beta2^step) + eps).
void adam_update(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n,
                 const AdamHyper& hyper, int64_t step);

// ---- An optimizer over a model's dense parameters ----


class DenseOptimizer {
 public:
  // `params` must be fp32 with value and gradient of equal size. Throws ConfigError
  // naming optim.dense when the kind is not sgd, adagrad or adam, and naming the key of
  // a hyper-parameter out of range (optim.eps, optim.beta1, optim.beta2,
  // optim.adagrad_initial_accumulator).
  static std::unique_ptr<DenseOptimizer> create(const OptimConfig& config, std::vector<DenseParam> params);

  virtual ~DenseOptimizer() = default;
  // Updates every parameter from its current gradient. `step` is the 1-based number of
  // this update (Adam's bias correction); lr the learning rate of this update.
  virtual void step(double lr, int64_t step) = 0;
  // Slots in parameter order, sharing storage with the optimizer: Adagrad "<p>.sum",
  // Adam "<p>.exp_avg" and "<p>.exp_avg_sq" (torch's state names); SGD none.
  virtual std::vector<NamedTensor> state() const = 0;
  virtual std::string name() const = 0;
};

}  // namespace hetrec::optim::optim
