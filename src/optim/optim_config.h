#pragma once
// Which optimizers train the dense layers and the embedding tables, with their rates and
// the learning-rate schedule. Parsed and validated from [optim] by train/config.cpp.
#include <cstdint>

namespace hetrec::inline optim {

enum class OptimizerKind { sgd, adagrad, rowwise_adagrad, adam };

struct OptimConfig {
  OptimizerKind dense = OptimizerKind::adagrad;           // sgd, adagrad or adam
  OptimizerKind sparse = OptimizerKind::rowwise_adagrad;  // sgd, adagrad or rowwise_adagrad
  double lr = 0.005;         // dense learning rate
  double sparse_lr = 0.005;  // embedding learning rate
  double eps = 1e-8;         // Adagrad / Adam epsilon
  double adagrad_initial_accumulator = 0.0;
  double beta1 = 0.9, beta2 = 0.999;  // Adam
  // MLPerf DLRM schedule: linear warm-up over warmup_steps, constant, then polynomial
  // decay (power decay_power) to 0 over decay_steps starting at decay_start.
  int64_t warmup_steps = 0;
  int64_t decay_start = 0;  // 0 = no decay
  int64_t decay_steps = 0;
  double decay_power = 2.0;
  // Dynamic loss scaling of fp16 dense compute (model.dense_dtype = "fp16", GPU): the
  // initial scale and the overflow-free steps after which it doubles (halved on overflow;
  // torch.cuda.amp.GradScaler's defaults).
  double loss_scale = 65536.0;
  int64_t loss_scale_growth_interval = 2000;
};

// The learning rates of one step.
struct StepRates {
  float dense_lr = 0.0f;
  float sparse_lr = 0.0f;
};

}  // namespace hetrec::optim::optim
