#pragma once
// The interface every backend's model implements (CPU here, GPU in kernels/ + gemm/).
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/named_tensor.h"
#include "core/tensor.h"
#include "data/batch.h"
#include "model/model_config.h"
#include "optim/lr_schedule.h"

namespace hetrec {

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

}  // namespace hetrec
