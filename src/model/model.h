#pragma once
// The interface every backend's model implements (CPU here, GPU in kernels/ + gemm/).
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "data/batch.h"
#include "model/model_config.h"

namespace hetrec {

// A named piece of model state (a parameter, an embedding table, an optimizer slot).
// The tensor shares storage with the model: writing into it changes the model.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

struct StepRates {
  float dense_lr = 0.0f;
  float sparse_lr = 0.0f;
};

class Model {
 public:
  virtual ~Model() = default;
  // Forward, backward and optimizer update on one batch. Returns the mean BCE loss of
  // the batch (computed before the update). The embedding backward is fused with the
  // sparse optimizer: no dense gradient of a table exists.
  virtual double train_step(const Batch& batch, const StepRates& rates) = 0;
  // Inference: writes one logit per sample into `logits` (size batch.size).
  virtual void predict(const Batch& batch, std::span<float> logits) = 0;
  // Every tensor a checkpoint must hold for an exact resume, in a fixed order.
  virtual std::vector<NamedTensor> state() = 0;
  virtual const ModelConfig& config() const = 0;
  virtual std::string describe() const = 0;
};

// Learning rates at `step` (0-based) under the MLPerf DLRM schedule of `optim`.
StepRates scheduled_rates(const OptimConfig& optim, int64_t step);

}  // namespace hetrec
