#pragma once
// The GPU engine behind make_gpu_model and make_distributed_gpu_model (model/gpu/gpu_dlrm.h):
// construction and state (gpu_dlrm.cpp), the step itself (gpu_dlrm_step.cpp: forward,
// backward, enqueue_step), what it reports (gpu_dlrm_report.cpp). Graph capture and
// replay is model/gpu/step_graph.h; every batch reaches the device through one
// DeviceBatchStream (model/gpu/device_batch_stream.h), which stages the next batch while
// a step runs.
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "dist/nccl_process_group.h"
#include "dist/process_group.h"
#include "dist/sharding.h"
#include "gemm/cublaslt_gemm.h"
#include "gpu/caching_allocator.h"
#include "gpu/device.h"
#include "gpu/event.h"
#include "gpu/memory.h"
#include "gpu/stream.h"
#include "hw/hardware.h"
#include "kernels/dot_interaction.h"
#include "kernels/loss_scale.h"
#include "kernels/step_scalars.h"
#include "model/gpu/dense_parameters.h"
#include "model/gpu/device_batch_stream.h"
#include "model/gpu/gpu_cross_net.h"
#include "model/gpu/gpu_dlrm.h"
#include "model/gpu/gpu_embeddings.h"
#include "model/gpu/gpu_mlp.h"
#include "model/gpu/model_small_gemms.h"
#include "model/gpu/sharded_embeddings.h"
#include "model/gpu/side_lane.h"
#include "model/gpu/step_graph.h"
#include "model/gpu/step_output.h"
#include "model/gpu/tuned_kernels.h"
#include "model/gpu/tuned_small_gemms.h"
#include "gemm_perf/gemm_model_params.h"

namespace hetrec::gpu_model {

// Phase boundaries of a profiled step (events recorded after each).
enum Phase : int {
  kStart,
  kBottomForward,
  kEmbeddingForward,
  kEmbeddingExchange,  // data parallel: pooled vectors to their samples' ranks
  kInteractionForward,
  kTopForward,
  kLoss,
  kTopBackward,
  kInteractionBackward,
  kBottomBackward,
  kDenseAllReduce,     // data parallel: dense gradients summed over ranks
  kGradientExchange,   // data parallel: pooled gradients to the shards, skip flags agreed
  kEmbeddingBackward,
  kDenseOptimizer,
  kPhaseCount
};

// Data parallelism over GPUs: the job's ranks on the host (checkpoints, control) and on
// the devices (NCCL, every exchange of the step), and where the tables live.
struct DataParallel {
  dist::ProcessGroup* host = nullptr;
  dist::NcclProcessGroup* devices = nullptr;
  dist::ShardingPlan plan;
};

class GpuDlrm final : public GpuModel {
 public:
  GpuDlrm(const ModelConfig& model, const OptimConfig& optim, const GpuModelOptions& options,
          const DataParallel* data_parallel = nullptr);
  ~GpuDlrm() override;

  double train_step(const Batch& batch, const StepRates& rates) override;
  void predict(const Batch& batch, std::span<float> logits) override;
  void prepare_next(const Batch& next) override { batches_.expect_next(next); }
  // Data parallel: the replicated tensors only (the tables are in embedding_shards()).
  std::vector<NamedTensor> state() override;
  // Data parallel: this rank's table blocks (host copies, taken back before the next step).
  std::vector<ShardTensor> embedding_shards();
  // Data parallel, collective over the host group: the state one device would hold.
  std::vector<NamedTensor> gather_full_state();
  const ModelConfig& config() const override { return config_; }

  cublaslt::Gemm::SelectionCounts gemm_selection_counts() const override { return gemm_.selection_counts(); }
  std::vector<SmallGemmDecision> small_gemm_decisions() const override;
  std::vector<std::pair<std::string, double>> phase_ms() const override;
  double loss_scale() const override;
  int64_t overflow_skipped_steps() const override { return overflow_skipped_steps_; }
  std::optional<double> device_roc_auc(std::span<const float> scores, std::span<const float> labels) override;
  std::optional<DeviceMemoryReport> device_memory() const override;
  std::string describe() const override;

 private:
  // ---- construction and state (gpu_dlrm.cpp) ----
  // The GEMMs of the bottom (or top) MLP's narrow layers that the small-GEMM kernels can
  // run: fp32 layers only (a 16-bit layer stays on cuBLASLt); the bottom MLP has no input
  // gradient.
  std::vector<tune::SmallGemmLayerGemm> narrow_gemms(bool bottom_mlp) const;
  // model.gemm_selection = "model", at the first reserve(): the small-GEMM kernels become
  // candidates of every narrow fp32 GEMM (model/gpu/model_small_gemms.h).
  void choose_small_gemms_by_model(int64_t batch);
  // model.gemm_selection = "model": the analytical model chooses every GEMM's configuration
  // for this GPU's description (model.gemm_hardware, or the one matching the device name)
  // with model.gemm_params (or the shipped parameters of its architecture).
  void select_gemms_by_model(const ModelConfig& model);
  static gpu::DeviceProperties select_device(int index);
  void check_batch(const Batch& batch, bool need_labels) const;
  // Copies host state written through state() back to the device.
  void take_back_state();
  void expose_state();
  int ranks() const { return data_parallel_.devices ? data_parallel_.devices->size() : 1; }

  // ---- the step (gpu_dlrm_step.cpp) ----
  // The batch `take` staged, into the step buffers, and the buffers sized for it.
  void copy_batch_to_device();
  // Waits for the step's device work; data parallel, bounded by the collective timeout
  // (a rank that died or hangs ends the step with a DeviceError naming `op`).
  void finish(const std::string& op);
  void validate_ids(const Batch& batch) const;
  // Activation, gradient and scratch buffers for `batch` samples and `max_ids` ids.
  // Returns true when any buffer was (re)allocated.
  bool reserve(int64_t batch, int64_t max_ids);
  // Records the end of `phase` when profiling (never while capturing: profiling steps
  // run eagerly).
  void mark(Phase phase);
  kernels::StepScalars* device_scalars() const { return reinterpret_cast<kernels::StepScalars*>(scalars_.raw()); }
  StepOutput* device_output() const { return reinterpret_cast<StepOutput*>(output_.raw()); }
  kernels::LossScaleState* device_loss_scale() const;
  // Bottom MLP, embeddings, interaction, top MLP. Returns the logits (batch x 1).
  const float* forward(int64_t batch);
  // Everything a training step does on the device, in stream order (graph-capturable:
  // no allocation, no synchronisation, per-step values read from device memory).
  void enqueue_step(int64_t batch);
  // Lookups, exchanges and the embedding update on their own stream (data parallel,
  // options.overlap_exchanges, not profiling).
  bool overlapped() const { return sharded_ && options_.overlap_exchanges && !options_.profile_phases; }
  // One device, not profiling: the embedding backward's sort (which needs only the ids)
  // runs on the embedding stream from the step's start, beside the dense forward and
  // backward (kernels/embedding_bag_backward.h embedding_backward_sort); the chunk sums
  // and the update follow it there once the interaction backward has written the
  // tables' gradients (concurrent_embedding_backward) or wait for it (sorted_) on the
  // compute stream.
  bool early_sort() const { return !sharded_ && !options_.profile_phases; }
  // early_sort() with options.overlap_embedding_backward, without loss scaling (whose
  // overflow check of every gradient must come before any update): the chunk sums and the
  // update run on the embedding stream beside the bottom MLP's backward and the dense
  // optimizer, which read none of what they write; the compute stream joins them
  // (update_done_) before the step's outputs.
  bool concurrent_embedding_backward() const {
    return early_sort() && options_.overlap_embedding_backward && !loss_scale_.defined();
  }
  // On the embedding stream, once the compute stream has the tables' slot gradients: the
  // gradient exchange, the agreement on the skip (and overflow) flags and the loss, then
  // the update. flags_agreed_ marks the end of its collectives, update_done_ its end.
  void start_embedding_backward(gpu::Communicator& comm, const float* grad_slots, int64_t stride,
                                kernels::StepScalars* scalars, kernels::LossScaleState* loss_scale);
  // early_sort(): the chunk sums and the update of this step's sorted ids on `stream`.
  void update_embeddings_after_sort(const float* grad_slots, int64_t stride, kernels::StepScalars* scalars,
                                    gpu::stream_t stream);
  void copy_skip_flag(gpu::stream_t s);

  ModelConfig config_;
  OptimConfig optim_;
  GpuModelOptions options_;
  gpu::DeviceProperties props_;
  gpu::MemoryInfo memory_at_start_;  // before the model allocated anything
  gpu::CachingDeviceAllocator alloc_;
  gpu::Stream compute_;
  gpu::Stream copy_;
  // overlapped(): lookups, exchanges and the embedding update (at normal priority: the
  // device's greatest measured no different, bench/results/multigpu-20261201b-h200x2.json).
  gpu::Stream embedding_stream_;
  gpu::Event fork_{false}, embeddings_ready_{false}, flags_agreed_{false}, update_done_{false};
  gpu::Event sorted_{false};            // early_sort(): the sort of this step's ids is done
  kernels::SparseUpdatePlan sort_plan_;  // early_sort(): its plan (points into embedding_workspace_)
  gpu::Event batch_ready_{false};
  cublaslt::Gemm gemm_;
  DeviceBatchStream batches_;
  std::unique_ptr<DenseParameters> dense_;
  std::unique_ptr<GpuMlp> bottom_;
  std::unique_ptr<GpuCrossNet> cross_;
  std::unique_ptr<GpuMlp> top_;
  std::unique_ptr<SideLane> side_lane_;  // options.overlap_weight_gradients
  std::unique_ptr<GpuEmbeddings> embeddings_;       // one device: every table
  std::unique_ptr<ShardedGpuEmbeddings> sharded_;   // data parallel: this rank's shards
  DataParallel data_parallel_;
  Tensor all_logits_;           // data parallel: every sample's logit (predict)
  TunedKernels tuned_;
  TunedSmallGemms small_gemms_;  // the MLPs hold pointers to its kernels
  // model.gemm_selection = "model": the GPU's description and the model's parameters.
  std::optional<std::pair<Hardware, GemmModelParams>> model_selection_;
  bool small_gemms_by_model_ = false;  // the model's small-GEMM candidates are in place
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
  int64_t id_capacity_ = 0;
  Tensor features_;        // B x (T+1)D: bottom output and pooled embeddings side by side
  Tensor grad_features_;   // B x (T+1)D
  Tensor interaction_;     // DLRM: B x interaction_width
  Tensor grad_logits_;     // B
  Tensor grad_top_in_;     // B x interaction_width
  Tensor scratch_;         // bias-gradient partial sums
  Tensor bce_workspace_;
  Tensor embedding_workspace_;
  const float* top_in_ = nullptr;

  StepGraph graph_;
  bool state_exposed_ = false;
  std::vector<gpu::Event> phase_events_ = std::vector<gpu::Event>(kPhaseCount);
  double upload_ms_ = 0.0;
};

}  // namespace hetrec::gpu_model
