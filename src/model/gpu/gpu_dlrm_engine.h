#pragma once
// The GPU engine behind make_gpu_model and make_distributed_gpu_model (model/gpu/gpu_dlrm.h):
// construction and state (gpu_dlrm.cpp), the step itself (gpu_dlrm_step.cpp: forward,
// backward, enqueue_step), what it reports (gpu_dlrm_report.cpp). Graph capture and
// replay is model/gpu/step_graph.h; every batch reaches the device through one
// DeviceBatchStream (model/gpu/device_batch_stream.h), which stages the next batch while
// a step runs. The step is written once: its embedding side is an EmbeddingStage
// (model/gpu/embedding_stage.h), every table on this device or, data parallel, this
// rank's shards and the exchanges between the ranks.
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "gemm/cublaslt_gemm.h"
#include "gpu/caching_allocator.h"
#include "gpu/device.h"
#include "gpu/event.h"
#include "gpu/memory.h"
#include "gpu/stream.h"
#include "tunable/dot_interaction/dot_interaction.h"
#include "kernels/loss_scale.h"
#include "kernels/step_scalars.h"
#include "model/gpu/dense_parameters.h"
#include "model/gpu/device_batch_stream.h"
#include "model/gpu/device_roc_auc.h"
#include "model/gpu/embedding_stage.h"
#include "model/gpu/gpu_cross_net.h"
#include "model/gpu/gpu_dlrm.h"
#include "model/gpu/gpu_mlp.h"
#include "model/gpu/host_state.h"
#include "model/gpu/sharded_embedding_stage.h"
#include "model/gpu/side_lane.h"
#include "model/gpu/step_gemm_choice.h"
#include "model/gpu/step_graph.h"
#include "model/gpu/step_phases.h"
#include "model/gpu/step_output.h"
#include "model/gpu/tuned_kernels.h"

namespace hetrec::inline model::gpu_model {

class GpuDlrm final : public GpuModel {
 public:
  GpuDlrm(const ModelConfig& model, const OptimConfig& optim, const GpuModelOptions& options,
          const DataParallel* data_parallel = nullptr);
  ~GpuDlrm() override;

  double train_step(const Batch& batch, const StepRates& rates) override;
  void predict(const Batch& batch, std::span<float> logits) override;
  void prepare_next(const Batch& next) override { batches_.expect_next(next); }
  // Host copies (model/gpu/host_state.h); data parallel, the replicated tensors only.
  std::vector<NamedTensor> state() override { return host_->named(); }
  std::optional<StateViolation> state_violation() override { return host_->violation(); }
  // Data parallel: this rank's table blocks (host copies, taken back before the next step).
  std::vector<ShardTensor> embedding_shards() { return host_->shards(); }
  const ModelConfig& config() const override { return config_; }

  cublaslt::Gemm::SelectionCounts gemm_selection_counts() const override { return gemm_.selection_counts(); }
  std::vector<SmallGemmDecision> small_gemm_decisions() const override;
  std::vector<std::pair<std::string, double>> phase_ms() const override {
    return phases_.ms(embeddings_->data_parallel());
  }
  std::vector<cublaslt::Gemm::Timing> gemm_timings() const override { return gemm_.timings(); }
  double loss_scale() const override;
  int64_t overflow_skipped_steps() const override { return overflow_skipped_steps_; }
  std::optional<double> device_roc_auc(std::span<const float> scores, std::span<const float> labels) override {
    return gpu_model::device_roc_auc(scores, labels, compute_);
  }
  std::optional<DeviceMemoryReport> device_memory() const override;
  std::string describe() const override;

 private:
  // ---- construction and state (gpu_dlrm.cpp) ----
  static gpu::DeviceProperties select_device(int index);

  // ---- the step (gpu_dlrm_step.cpp) ----
  // The batch `take` staged, into the step buffers, and the buffers sized for it.
  void copy_batch_to_device();
  // Activation, gradient and scratch buffers for `batch` samples. Returns true when any
  // buffer was (re)allocated.
  bool reserve(int64_t batch);
  void mark(Phase phase) { phases_.mark(phase, compute_.get()); }
  kernels::StepScalars* device_scalars() const { return reinterpret_cast<kernels::StepScalars*>(scalars_.raw()); }
  StepOutput* device_output() const { return reinterpret_cast<StepOutput*>(output_.raw()); }
  kernels::LossScaleState* device_loss_scale() const;
  // What the embedding stage's hooks of this step read and write.
  EmbeddingStepArgs embedding_args();
  // Bottom MLP, embeddings, interaction, top MLP. Returns the logits (batch x 1).
  const float* forward(int64_t batch);
  // Everything a training step does on the device, in stream order (graph-capturable:
  // no allocation, no synchronisation, per-step values read from device memory).
  void enqueue_step(int64_t batch);
  void copy_skip_flag(gpu::stream_t s);

  ModelConfig config_;
  OptimConfig optim_;
  GpuModelOptions options_;
  gpu::DeviceProperties props_;
  gpu::MemoryInfo memory_at_start_;  // before the model allocated anything
  gpu::CachingDeviceAllocator alloc_;
  gpu::Stream compute_;
  gpu::Stream copy_;
  gpu::Event batch_ready_{false};
  cublaslt::Gemm gemm_;
  StepGemmChoice gemm_choice_;
  DeviceBatchStream batches_;
  std::unique_ptr<DenseParameters> dense_;
  std::unique_ptr<GpuMlp> bottom_;
  std::unique_ptr<GpuCrossNet> cross_;
  std::unique_ptr<GpuMlp> top_;
  std::unique_ptr<SideLane> side_lane_;  // options.overlap_weight_gradients
  // Every table on this device, or data parallel this rank's shards and the exchanges.
  std::unique_ptr<EmbeddingStage> embeddings_;
  TunedKernels tuned_;
  kernels::DotInteractionShape dot_shape_;
  Tensor step_;  // i64 [1], host: updates applied so far
  gpu::PinnedBuffer scalars_host_;
  gpu::PinnedBuffer output_host_;
  Tensor scalars_;  // device StepScalars
  Tensor output_;   // device StepOutput
  Tensor loss_scale_;  // fp16: device LossScaleState
  kernels::LossScaleRule loss_scale_rule_;
  int64_t overflow_skipped_steps_ = 0;

  int64_t capacity_ = 0;
  Tensor features_;        // B x (T+1)D: bottom output and pooled embeddings side by side
  Tensor grad_features_;   // B x (T+1)D
  Tensor interaction_;     // DLRM: B x interaction_width
  Tensor grad_logits_;     // B
  Tensor grad_top_in_;     // B x interaction_width
  Tensor scratch_;         // bias-gradient partial sums
  Tensor bce_workspace_;
  const float* top_in_ = nullptr;

  StepGraph graph_;
  StepPhases phases_;
  std::unique_ptr<HostState> host_;  // after every member it refers to
};

}  // namespace hetrec::model::gpu_model
