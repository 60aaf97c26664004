#include "model/gpu/gpu_dlrm.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "model/dlrm.h"
#include "model/gpu/dense_network.h"
#include "model/gpu/gemm_workspace.h"
#include "model/gpu/gpu_dlrm_engine.h"
#include "model/gpu/local_embedding_stage.h"

namespace hetrec::inline model {
namespace gpu_model {

GpuDlrm::GpuDlrm(const ModelConfig& model, const OptimConfig& optim, const GpuModelOptions& options,
                 const DataParallel* data_parallel)
    : config_(model),
      optim_(optim),
      options_(options),
      props_(select_device(options.device)),
      memory_at_start_(gpu::memory_info()),
      alloc_(options.device),
      gemm_(alloc_, kGemmWorkspaceBytes),
      gemm_choice_(model, options.device, props_, gemm_),
      // Data parallel: dense features and labels of the rank's samples only (the shards'
      // bags are staged by ShardedGpuEmbeddings).
      batches_(model.num_dense, model.num_tables(), /*stage_bags=*/data_parallel == nullptr, alloc_),
      step_(Tensor::zeros({1}, DType::i64)),
      scalars_host_(sizeof(kernels::StepScalars)),
      output_host_(sizeof(StepOutput)),
      phases_(options.profile_phases) {
  const int dim = model.embedding_dim;
  const gpu::stream_t s = compute_.get();

  GpuDenseNetwork net = make_dense_network(model, optim, options.precision, alloc_, s);
  dense_ = std::move(net.params);
  bottom_ = std::move(net.bottom);
  cross_ = std::move(net.cross);
  top_ = std::move(net.top);
  if (options.overlap_weight_gradients) {
    gemm_.add_side_lane(alloc_);
    side_lane_ = std::make_unique<gpu_model::SideLane>();
    bottom_->set_side_lane(side_lane_.get());
    top_->set_side_lane(side_lane_.get());
    if (cross_) cross_->set_side_lane(side_lane_.get());
  }
  if (data_parallel) {
    auto sharded = std::make_unique<ShardedEmbeddingStage>(model, optim, *data_parallel, alloc_, s,
                                                           options.overlap_exchanges && !options.profile_phases);
    batches_.attach_shards(&sharded->shards(), data_parallel->devices->rank(), data_parallel->devices->size());
    embeddings_ = std::move(sharded);
  } else {
    // Not profiling, the backward's sort starts with the step; with
    // overlap_embedding_backward and no loss scaling the update runs beside the bottom
    // MLP's backward (model/gpu/local_embedding_stage.h).
    LocalEmbeddingStage::Options local;
    local.early_sort = !options.profile_phases;
    local.concurrent_update = local.early_sort && options.overlap_embedding_backward &&
                              options.precision != cublaslt::Precision::fp16;
    embeddings_ = std::make_unique<LocalEmbeddingStage>(model, optim, alloc_, s, local);
  }
  if (model.arch == Arch::dlrm) {
    dot_shape_.num_features = model.num_tables() + 1;
    dot_shape_.dim = dim;
    dot_shape_.self = model.interaction_self;
    HETREC_CHECK(dot_shape_.output_width() == model.interaction_width(), "dot interaction width");
  }
  const kernels::DotForwardShape dot_tuning_shape{dot_shape_.num_features, dot_shape_.dim, dot_shape_.self};
  const kernels::CrossNetShape cross_tuning_shape{cross_ ? cross_->operand_type() : DType::f32,
                                                  model.interaction_width()};
  // The lookups write X (fp32), or with a bf16 exchange the send buffers (bf16); the
  // update reads the gradients of the same type.
  const DType pooled_dtype = data_parallel ? data_parallel->plan.exchange_dtype : DType::f32;
  tuned_ = gpu_model::load_tuned_kernels(options.tuned_kernels_file, props_,
                                         kernels::EmbeddingForwardShape{model.row_dtype, pooled_dtype, dim},
                                         model.arch == Arch::dlrm ? &dot_tuning_shape : nullptr,
                                         kernels::SparseUpdateShape{model.row_dtype, dim,
                                                                    gpu_model::sparse_optimizer_kind(optim.sparse),
                                                                    pooled_dtype},
                                         cross_ && cross_->num_layers() > 0 ? &cross_tuning_shape : nullptr);
  if (cross_) cross_->set_tuned(tuned_.cross_forward.get(), tuned_.cross_backward.get());
  embeddings_->use_tuned(tuned_.embedding_forward.get(), tuned_.sparse_update.get());
  gemm_choice_.load_small_gemms(options.tuned_kernels_file, *bottom_, *top_);
  scalars_ = Tensor::empty({static_cast<int64_t>(sizeof(kernels::StepScalars))}, DType::u8, alloc_);
  output_ = Tensor::empty({static_cast<int64_t>(sizeof(StepOutput))}, DType::u8, alloc_);
  *output_host_.as<StepOutput>() = StepOutput{};  // the overflow flag is only copied with fp16
  if (options.precision == cublaslt::Precision::fp16) {
    kernels::LossScaleState initial;
    initial.scale = static_cast<float>(optim.loss_scale);
    initial.inv_scale = 1.0f / initial.scale;
    loss_scale_rule_.growth_interval = static_cast<int32_t>(optim.loss_scale_growth_interval);
    loss_scale_ = Tensor::empty({static_cast<int64_t>(sizeof(kernels::LossScaleState))}, DType::u8, alloc_);
    gpu::memcpy_async(loss_scale_.raw(), &initial, sizeof(initial), gpu::CopyKind::host_to_device, s);
  }
  compute_.synchronize();  // also keeps `initial` alive until its copy is done
  host_ = std::make_unique<HostState>(*dense_, *embeddings_, compute_, step_);
}

GpuDlrm::~GpuDlrm() {
  try {
    compute_.synchronize();
    embeddings_->synchronize();
    copy_.synchronize();
  } catch (const Error&) {
    // A device error is already being reported elsewhere; the destructor must not throw.
  }
}

gpu::DeviceProperties GpuDlrm::select_device(int index) {
  const int count = gpu::device_count();
  if (count == 0) throw DeviceError("GPU model: no GPU device is visible");
  if (index < 0 || index >= count)
    throw ConfigError("GPU model: device " + std::to_string(index) + " requested, " + std::to_string(count) +
                      " visible");
  gpu::set_device(index);
  return gpu::device_properties(index);
}

}  // namespace gpu_model

namespace {

// The data-parallel interface over the same engine (DistributedModel and GpuModel are
// separate Model interfaces, so this one forwards to the engine it owns).
class DistributedGpuDlrm final : public DistributedGpuModel {
 public:
  DistributedGpuDlrm(std::unique_ptr<gpu_model::GpuDlrm> engine, OptimizerKind sparse, dist::ProcessGroup& host)
      : engine_(std::move(engine)), sparse_(sparse), host_(host) {}
  double train_step(const Batch& batch, const StepRates& rates) override { return engine_->train_step(batch, rates); }
  void predict(const Batch& batch, std::span<float> logits) override { engine_->predict(batch, logits); }
  std::vector<NamedTensor> state() override { return engine_->state(); }
  const ModelConfig& config() const override { return engine_->config(); }
  std::string describe() const override { return engine_->describe(); }
  int64_t overflow_skipped_steps() const override { return engine_->overflow_skipped_steps(); }
  std::optional<DeviceMemoryReport> device_memory() const override { return engine_->device_memory(); }
  std::optional<double> device_roc_auc(std::span<const float> scores, std::span<const float> labels) override {
    return engine_->device_roc_auc(scores, labels);
  }
  dist::ProcessGroup& group() override { return host_; }
  std::vector<ShardTensor> embedding_shards() override { return engine_->embedding_shards(); }
  // Collective over the host group: the state one device would hold.
  std::vector<NamedTensor> gather_full_state() override {
    std::vector<NamedTensor> out = engine_->state();
    const NamedTensor step = out.back();
    out.pop_back();
    for (auto& t : gather_full_tables(engine_->embedding_shards(), engine_->config().embedding_spec(), sparse_, host_))
      out.push_back(std::move(t));
    out.push_back(step);
    return out;
  }
  std::vector<std::pair<std::string, double>> phase_ms() const override { return engine_->phase_ms(); }
  cublaslt::Gemm::SelectionCounts gemm_selection_counts() const override { return engine_->gemm_selection_counts(); }
  std::vector<gpu_model::SmallGemmDecision> small_gemm_decisions() const override {
    return engine_->small_gemm_decisions();
  }
  void prepare_next(const Batch& next) override { engine_->prepare_next(next); }

 private:
  std::unique_ptr<gpu_model::GpuDlrm> engine_;
  OptimizerKind sparse_;  // optim.sparse, which the full tables' optimizer state follows
  dist::ProcessGroup& host_;
};

// model.dense_dtype picks the GEMM precision; the network is checked as the CPU model's.
GpuModelOptions checked_options(const ModelConfig& model, const OptimConfig& optim, const GpuModelOptions& options) {
  GpuModelOptions opts = options;
  if (model.dense_dtype == DType::bf16) {
    opts.precision = cublaslt::Precision::bf16;
  } else if (model.dense_dtype == DType::f16) {
    opts.precision = cublaslt::Precision::fp16;
  } else if (model.dense_dtype != DType::f32) {
    throw ConfigError("model.dense_dtype = \"" + std::string(dtype_name(model.dense_dtype)) +
                      "\": the GPU backend computes the dense layers in fp32 (tf32 with model.allow_tf32), bf16 or fp16");
  }
  // The CPU model's checks apply to the network; its dense compute is always fp32.
  ModelConfig checked = model;
  checked.dense_dtype = DType::f32;
  validate_cpu_model_config(checked, optim);
  return opts;
}

}  // namespace

std::unique_ptr<GpuModel> make_gpu_model(const ModelConfig& model, const OptimConfig& optim,
                                         const GpuModelOptions& options) {
  return std::make_unique<gpu_model::GpuDlrm>(model, optim, checked_options(model, optim, options));
}

std::unique_ptr<DistributedGpuModel> make_distributed_gpu_model(const ModelConfig& model, const OptimConfig& optim,
                                                             const GpuModelOptions& options,
                                                             const dist::ShardingPlan& plan,
                                                             dist::ProcessGroup& host, dist::NcclProcessGroup& devices) {
  if (host.size() != devices.size() || host.rank() != devices.rank() || plan.world_size != devices.size())
    throw InternalError("data-parallel GPU model: host group, device group and sharding plan disagree on the ranks");
  GpuModelOptions opts = checked_options(model, optim, options);
  opts.device = devices.device();
  gpu_model::DataParallel data_parallel{&host, &devices, plan};
  return std::make_unique<DistributedGpuDlrm>(std::make_unique<gpu_model::GpuDlrm>(model, optim, opts, &data_parallel),
                                              optim.sparse, host);
}

}  // namespace hetrec::model::model

