#pragma once
// The embedding side of the GPU engine's step (model/gpu/gpu_dlrm_engine.h) behind one
// interface, so that the step is written once for one device and for data parallelism:
//   LocalEmbeddingStage    every table on the step's device (model/gpu/local_embedding_stage.h);
//   ShardedEmbeddingStage  this rank's shards of a data-parallel job, with the exchanges of
//                          pooled vectors and their gradients, the dense all-reduce and the
//                          agreement on the step's flags over NCCL
//                          (model/gpu/sharded_embedding_stage.h).
// The step calls the same hooks at the same points whichever it holds. The step hooks only
// enqueue device work on the compute stream, or on a stream of the stage's own that the
// compute stream joins (graph-capturable: no allocation, no synchronisation).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "data/batch.h"
#include "gpu/stream.h"
#include "tunable/embedding_forward/embedding_forward_tuned.h"
#include "kernels/loss_scale_state.h"
#include "tunable/sparse_update/sparse_update_tuned.h"
#include "kernels/step_scalars.h"
#include "model/gpu/batch_staging.h"
#include "model/gpu/device_mirror.h"
#include "model/gpu/step_phases.h"
#include "model/model_config.h"
#include "nn/sharded_embedding_collection.h"

namespace hetrec::inline model::gpu_model {

// What the hooks of one step read and write.
struct EmbeddingStepArgs {
  gpu::Stream* compute = nullptr;
  StepPhases* phases = nullptr;
  const DeviceBatch* batch = nullptr;             // the staged batch (its bags: one device)
  kernels::StepScalars* scalars = nullptr;        // device: rates, step, the skip flag
  kernels::LossScaleState* loss_scale = nullptr;  // device, fp16 only
  double* loss = nullptr;                         // device: the step's loss
  // X's table slots (sample b, table t at slots[b * stride + t * dim]) and their gradients
  // (set by the step once its interaction backward has named X's gradient).
  float* slots = nullptr;
  float* grad_slots = nullptr;
  int64_t stride = 0;
};

class EmbeddingStage {
 public:
  virtual ~EmbeddingStage() = default;

  // ---- the training step, in this order ----
  // At the step's start: work that needs only the ids.
  virtual void begin_step(const EmbeddingStepArgs& a) = 0;
  // The lookups into X's table slots, with `bottom_forward` (the bottom MLP, which writes
  // slot 0) beside or before them; records kBottomForward, kEmbeddingForward and
  // kEmbeddingExchange. Also the forward of a prediction.
  virtual void forward(const EmbeddingStepArgs& a, const std::function<void()>& bottom_forward) = 0;
  // Once the interaction backward has written the slots' gradients, before the bottom
  // MLP's backward.
  virtual void after_interaction_backward(const EmbeddingStepArgs& a) = 0;
  // After the bottom MLP's backward (and the loss scale's overflow check): the dense
  // gradients summed over ranks where there are several, and the embedding update;
  // records kDenseAllReduce and kGradientExchange.
  virtual void after_dense_backward(const EmbeddingStepArgs& a, float* dense_grads, int64_t dense_elements) = 0;
  // Before the step's outputs: the compute stream joins what ran beside it.
  virtual void join(const EmbeddingStepArgs& a) = 0;

  // ---- prediction ----
  // The fewest samples a prediction can run (data parallel: one per rank).
  virtual int64_t min_predict_batch() const = 0;
  // The logits of all `batch` samples on the device, from this rank's `local_count`;
  // every rank agrees on the skip flag.
  virtual const float* gather_logits(const float* local, int64_t local_count, int64_t batch,
                                     kernels::StepScalars* scalars, gpu::stream_t stream) = 0;

  // ---- host side ----
  // Waits for the work on the stage's own stream (at teardown: it may read the step's
  // buffers).
  virtual void synchronize() = 0;
  // Waits for the device work enqueued on `compute`; data parallel, bounded by the
  // collective timeout (a rank that died or hangs ends it with a DeviceError naming `op`).
  virtual void wait(gpu::Stream& compute, const std::string& op) = 0;
  // Scratch for `max_ids` ids of the staged batch. Returns true when it was (re)allocated.
  virtual bool reserve(int64_t max_ids) = 0;
  // DataError naming the table, sample and id of the first id outside its table.
  virtual void validate(const Batch& batch) const = 0;
  // The tables' (or shards') weights and optimizer state as device mirrors.
  virtual const std::vector<DeviceMirror>& mirrors() = 0;
  // Data parallel: this rank's table blocks (host copies of mirrors()).
  virtual std::vector<ShardTensor> shard_tensors() = 0;
  virtual bool data_parallel() const = 0;
  virtual int64_t host_bytes() const = 0;
  // Where the tables are, for the engine's description ("; every table in device memory").
  virtual std::string describe(const ModelConfig& model) const = 0;
  virtual void use_tuned(const kernels::TunedEmbeddingForward* forward, const kernels::TunedSparseUpdate* update) = 0;
};

}  // namespace hetrec::model::gpu_model
