#pragma once
// The interface every backend's model implements (CPU here, GPU in kernels/ + gemm/).
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/named_tensor.h"
#include "core/tensor.h"
#include "data/batch.h"
#include "model/model_config.h"
#include "model/state_check.h"
#include "optim/lr_schedule.h"

namespace hetrec::inline model {

// Device memory of a model on a GPU, measured (GPU backends only).
struct DeviceMemoryReport {
  int64_t allocator_peak_bytes = 0;      // the caching allocator's high-water mark of bytes in use
  int64_t allocator_reserved_bytes = 0;  // what the allocator obtained from the driver (in use + cached)
  int64_t device_used_at_start_bytes = 0;  // total - free before the model allocated anything (runtime context)
  int64_t device_used_bytes = 0;           // total - free now (cudaMemGetInfo)
  int64_t device_total_bytes = 0;
  // device_used - device_used_at_start - allocator_reserved: memory the model's libraries
  // and graphs hold outside the allocator (cuBLASLt's handle, graph executables, modules).
  int64_t outside_allocator_bytes = 0;
  int64_t host_table_bytes = 0;  // page-locked host memory of host-resident tables
};

class Model {
 public:
  virtual ~Model() = default;
  // Forward, backward and optimizer update on one batch. Returns the mean BCE loss of
  // the batch (computed before the update). The embedding backward is fused with the
  // sparse optimizer: no dense gradient of a table exists.
  virtual double train_step(const Batch& batch, const StepRates& rates) = 0;
  // Called before a train_step: `next` is the batch the train_step after it will
  // receive (the caller keeps `next` alive and unchanged until the coming train_step
  // returns). A backend may prepare it while that step runs on the device (the GPU
  // backend packs it for its copy to the device); the following train_step checks that
  // its batch is the one prepared (batch_fingerprint) and stages any other batch as
  // usual. Optional: train_step works the same without it.
  virtual void prepare_next(const Batch& next) { (void)next; }
  // Inference: writes one logit per sample into `logits` (size batch.size).
  virtual void predict(const Batch& batch, std::span<float> logits) = 0;
  // Every tensor a checkpoint must hold for an exact resume, in a fixed order.
  virtual std::vector<NamedTensor> state() = 0;
  // The first element of the state that fails the check of model/state_check.h, or nullopt.
  // The default checks the host tensors state() gives; a GPU backend checks its device
  // memory in place, without copying the state out.
  virtual std::optional<StateViolation> state_violation() { return find_state_violation(state()); }
  virtual const ModelConfig& config() const = 0;
  virtual std::string describe() const = 0;
  // Steps whose update was skipped because fp16 loss-scaled gradients overflowed (GPU,
  // model.dense_dtype = fp16); 0 elsewhere.
  virtual int64_t overflow_skipped_steps() const { return 0; }
  // Measured device memory (nullopt on the CPU backend).
  virtual std::optional<DeviceMemoryReport> device_memory() const { return std::nullopt; }
  // The exact ROC AUC of scores against labels (label > 0.5 positive, ties count one
  // half) computed on the model's device, or nullopt where the backend has none (the
  // caller then computes it on the host: train/auc.h).
  virtual std::optional<double> device_roc_auc(std::span<const float> scores, std::span<const float> labels) {
    (void)scores;
    (void)labels;
    return std::nullopt;
  }
};

}  // namespace hetrec::model::model
