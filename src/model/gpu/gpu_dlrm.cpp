#include "model/gpu/gpu_dlrm.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/install_paths.h"
#include "core/seed_streams.h"
#include "gemm/device_probe.h"
#include "gemm_perf/gemm_ranker.h"
#if defined(HETREC_WITH_CUDA)
#include "gemm/cublaslt_model_choice.h"
#endif
#include "model/dlrm.h"
#include "model/gpu/gemm_workspace.h"
#include "model/gpu/gpu_dlrm_engine.h"
#include "nn/cross_net.h"
#include "nn/mlp.h"
#include "optim/dense_optimizer.h"

namespace hetrec {
namespace gpu_model {

// The dense initialisation streams of model/dlrm.cpp (core/seed_streams.h), so the GPU
// model starts from the CPU model's values.
using seed_streams::kBottomMlpStreams;
using seed_streams::kCrossNetStreams;
using seed_streams::kTopMlpStreams;

GpuDlrm::GpuDlrm(const ModelConfig& model, const OptimConfig& optim, const GpuModelOptions& options,
                 const DataParallel* data_parallel)
    : config_(model),
      optim_(optim),
      options_(options),
      props_(select_device(options.device)),
      memory_at_start_(gpu::memory_info()),
      alloc_(options.device),
      gemm_(alloc_, kGemmWorkspaceBytes),
      // Data parallel: dense features and labels of the rank's samples only (the shards'
      // bags are staged by ShardedGpuEmbeddings).
      batches_(model.num_dense, model.num_tables(), /*stage_bags=*/data_parallel == nullptr, alloc_),
      step_(Tensor::zeros({1}, DType::i64)),
      scalars_host_(sizeof(kernels::StepScalars)),
      output_host_(sizeof(StepOutput)) {
  const int dim = model.embedding_dim;
  const gpu::stream_t s = compute_.get();
  if (model.gemm_selection == GemmSelection::model) select_gemms_by_model(model);

  // Dense parameters: initialised on the host exactly as the CPU model does.
  const uint64_t dense_seed = seed_streams::dense_init_seed(model.init_seed);
  Mlp<float> bottom(model.num_dense, model.bottom_mlp, /*relu_last=*/true);
  bottom.init(dense_seed, kBottomMlpStreams);
  Mlp<float> top(model.interaction_width(), model.top_mlp, /*relu_last=*/false);
  top.init(dense_seed, kTopMlpStreams);
  std::optional<CrossNet<float>> cross;
  if (model.arch == Arch::dcnv2 && model.cross_layers > 0) {
    cross.emplace(model.interaction_width(), model.cross_layers, model.cross_rank);
    cross->init(dense_seed, kCrossNetStreams);
  }
  std::vector<DenseParam> params = bottom.parameters("bottom_mlp.");
  const int cross_first = static_cast<int>(params.size());
  if (cross)
    for (auto& p : cross->parameters("cross_net.")) params.push_back(std::move(p));
  const int top_first = static_cast<int>(params.size());
  for (auto& p : top.parameters("top_mlp.")) params.push_back(std::move(p));
  (void)DenseOptimizer::create(optim, params);  // validates optim.* as the CPU model does

  const DType copy_type = options.precision == cublaslt::Precision::bf16   ? DType::bf16
                          : options.precision == cublaslt::Precision::fp16 ? DType::f16
                                                                           : DType::f32;
  dense_ = std::make_unique<gpu_model::DenseParameters>(params, optim, alloc_, s, copy_type);
  bottom_ = std::make_unique<gpu_model::GpuMlp>(model.num_dense, model.bottom_mlp, true, *dense_, 0, options.precision);
  if (cross)
    cross_ = std::make_unique<gpu_model::GpuCrossNet>(model.interaction_width(), model.cross_layers, model.cross_rank,
                                                      *dense_, cross_first, options.precision);
  // A 16-bit cross net hands the top MLP its output as the 16-bit operand it writes anyway.
  const bool cross_16bit = cross_ && cross_->half();
  top_ = std::make_unique<gpu_model::GpuMlp>(model.interaction_width(), model.top_mlp, false, *dense_, top_first,
                                             options.precision, cross_16bit);
  if (cross_16bit) cross_->set_output_16bit_only(top_->layer_16bit(0));
  if (cross_16bit) cross_->set_residual_16bit(model.cross_residual_16bit);
  if (options.overlap_weight_gradients) {
    gemm_.add_side_lane(alloc_);
    side_lane_ = std::make_unique<gpu_model::SideLane>();
    bottom_->set_side_lane(side_lane_.get());
    top_->set_side_lane(side_lane_.get());
    if (cross_) cross_->set_side_lane(side_lane_.get());
  }
  if (data_parallel) {
    data_parallel_ = *data_parallel;
    sharded_ = std::make_unique<gpu_model::ShardedGpuEmbeddings>(model, optim, data_parallel->plan,
                                                                 data_parallel->devices->rank(),
                                                                 data_parallel->devices->communicator(), alloc_, s);
    batches_.attach_shards(sharded_.get(), data_parallel->devices->rank(), data_parallel->devices->size());
  } else {
    embeddings_ = std::make_unique<gpu_model::GpuEmbeddings>(model, optim, alloc_, s);
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
  // The narrow layers' GEMMs with a tuned small-GEMM winner; with the model's selection,
  // the others join at the first reserve(), when the batch is known.
  small_gemms_ = gpu_model::load_tuned_small_gemms(options.tuned_kernels_file, props_, narrow_gemms(true),
                                                   narrow_gemms(false));
  bottom_->use_small_gemms(small_gemms_.bottom);
  top_->use_small_gemms(small_gemms_.top);
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
}

GpuDlrm::~GpuDlrm() {
  try {
    compute_.synchronize();
    embedding_stream_.synchronize();
    copy_.synchronize();
  } catch (const Error&) {
    // A device error is already being reported elsewhere; the destructor must not throw.
  }
}

// Data parallel: the replicated tensors only (the tables are in embedding_shards()).
std::vector<NamedTensor> GpuDlrm::state() {
  expose_state();
  std::vector<NamedTensor> out;
  for (const auto* list : {&dense_->parameter_mirrors(), &dense_->slot_mirrors()})
    for (const gpu_model::DeviceMirror& m : *list) out.push_back({m.name, m.host});
  if (embeddings_)
    for (const gpu_model::DeviceMirror& m : embeddings_->mirrors()) out.push_back({m.name, m.host});
  out.push_back({"step", step_});
  return out;
}

// Data parallel: this rank's table blocks (host copies, taken back before the next step).
std::vector<ShardTensor> GpuDlrm::embedding_shards() {
  expose_state();
  return sharded_->shard_tensors();
}

// Data parallel, collective over the host group: the state one device would hold.
std::vector<NamedTensor> GpuDlrm::gather_full_state() {
  std::vector<NamedTensor> out = state();
  const NamedTensor step = out.back();
  out.pop_back();
  for (auto& t : gather_full_tables(embedding_shards(), config_.embedding_spec(), optim_.sparse, *data_parallel_.host))
    out.push_back(std::move(t));
  out.push_back(step);
  return out;
}

// The GEMMs of the bottom (or top) MLP's narrow layers that the small-GEMM kernels can
// run: fp32 layers only (a 16-bit layer stays on cuBLASLt); the bottom MLP has no input
// gradient.
std::vector<tune::SmallGemmLayerGemm> GpuDlrm::narrow_gemms(bool bottom_mlp) const {
  std::vector<tune::SmallGemmLayerGemm> gemms =
      bottom_mlp ? tune::small_gemm_mlp_gemms("bottom_mlp", config_.num_dense, config_.bottom_mlp, true, false,
                                              DType::f32)
                 : tune::small_gemm_mlp_gemms("top_mlp", config_.interaction_width(), config_.top_mlp, false, true,
                                              DType::f32);
  const gpu_model::GpuMlp& mlp = bottom_mlp ? *bottom_ : *top_;
  std::erase_if(gemms, [&](const tune::SmallGemmLayerGemm& g) { return mlp.layer_16bit(g.layer); });
  return gemms;
}

// model.gemm_selection = "model", at the first reserve(): the small-GEMM kernels become
// candidates of every narrow fp32 GEMM (model/gpu/model_small_gemms.h).
void GpuDlrm::choose_small_gemms_by_model(int64_t batch) {
  if (!model_selection_ || small_gemms_by_model_ || !options_.model_small_gemms) return;
  small_gemms_ = gpu_model::choose_small_gemms_by_model(model_selection_->first, model_selection_->second, props_,
                                                        narrow_gemms(true), narrow_gemms(false), batch,
                                                        std::move(small_gemms_));
  bottom_->use_small_gemms(small_gemms_.bottom);
  top_->use_small_gemms(small_gemms_.top);
  small_gemms_by_model_ = true;
}

// model.gemm_selection = "model": the analytical model chooses every GEMM's configuration
// for this GPU's description (model.gemm_hardware, or the one matching the device name)
// with model.gemm_params (or the shipped parameters of its architecture).
void GpuDlrm::select_gemms_by_model(const ModelConfig& model) {
  const std::string dir = default_hardware_dir();
  Hardware hw = model.gemm_hardware.empty() ? hardware_for_device(props_.name, dir, "model.gemm_hardware")
                                            : load_hardware_by_name(model.gemm_hardware, dir);
  GemmModelParams params =
      model.gemm_params.empty() ? load_gemm_params_for(hw, dir + "/params") : load_gemm_params(model.gemm_params);
  const std::string cache = model.gemm_cache == "none" ? std::string()
                            : model.gemm_cache.empty()
                                ? default_cache_path("gemm-selections-" + std::to_string(options_.device) + ".txt")
                                : model.gemm_cache;
  model_selection_.emplace(hw, params);
#if defined(HETREC_WITH_CUDA)
  // The learned ranker trained for this GPU, driver and cuBLASLt (model.gemm_ranker): its
  // router chooses where it is reliable, the heuristic's top-1 elsewhere.
  const GemmRankerValidators device = cublaslt::local_ranker_validators(options_.device);
  const std::string ranker_file = choose_gemm_ranker_file(model.gemm_ranker, data_dir() + "/gemm/rankers", device);
  std::shared_ptr<const GemmRanker> ranker;
  if (!ranker_file.empty()) ranker = load_gemm_ranker(ranker_file, device);
  gemm_.use_model_selection(std::move(hw), std::move(params), cache, ranker,
                            ranker ? gemm_ranker_id(ranker_file) : std::string());
#else
  gemm_.use_model_selection(std::move(hw), std::move(params), cache);  // refuses: the model needs CUDA
#endif
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

void GpuDlrm::check_batch(const Batch& batch, bool need_labels) const {
  const auto expect = [&](bool ok, const std::string& what) {
    if (!ok) throw DataError("batch from sample " + std::to_string(batch.first_sample) + ": " + what);
  };
  expect(batch.size > 0, "expected at least one sample, got " + std::to_string(batch.size));
  expect(batch.num_dense == config_.num_dense, "has " + std::to_string(batch.num_dense) +
                                                   " dense features, the model (model.num_dense) expects " +
                                                   std::to_string(config_.num_dense));
  expect(static_cast<int64_t>(batch.dense.size()) == batch.size * batch.num_dense,
         "dense holds " + std::to_string(batch.dense.size()) + " values, expected size x num_dense = " +
             std::to_string(batch.size * batch.num_dense));
  if (need_labels)
    expect(static_cast<int64_t>(batch.labels.size()) == batch.size,
           "labels holds " + std::to_string(batch.labels.size()) + " values, expected " + std::to_string(batch.size));
}

// Copies host state written through state() back to the device.
void GpuDlrm::take_back_state() {
  if (!state_exposed_) return;
  const gpu::stream_t s = compute_.get();
  gpu_model::upload(dense_->parameter_mirrors(), s);
  gpu_model::upload(dense_->slot_mirrors(), s);
  gpu_model::upload(sharded_ ? sharded_->mirrors() : embeddings_->mirrors(), s);
  dense_->refresh_16bit(s);
  compute_.synchronize();
  state_exposed_ = false;
}

void GpuDlrm::expose_state() {
  if (state_exposed_) return;
  const gpu::stream_t s = compute_.get();
  gpu_model::download(dense_->parameter_mirrors(), s);
  gpu_model::download(dense_->slot_mirrors(), s);
  gpu_model::download(sharded_ ? sharded_->mirrors() : embeddings_->mirrors(), s);
  compute_.synchronize();
  state_exposed_ = true;
}

}  // namespace gpu_model

namespace {

// The data-parallel interface over the same engine (DistributedModel and GpuModel are
// separate Model interfaces, so this one forwards to the engine it owns).
class DistributedGpuDlrm final : public DistributedGpuModel {
 public:
  DistributedGpuDlrm(std::unique_ptr<gpu_model::GpuDlrm> engine, dist::ProcessGroup& host)
      : engine_(std::move(engine)), host_(host) {}
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
  std::vector<NamedTensor> gather_full_state() override { return engine_->gather_full_state(); }
  std::vector<std::pair<std::string, double>> phase_ms() const override { return engine_->phase_ms(); }
  cublaslt::Gemm::SelectionCounts gemm_selection_counts() const override { return engine_->gemm_selection_counts(); }
  std::vector<gpu_model::SmallGemmDecision> small_gemm_decisions() const override {
    return engine_->small_gemm_decisions();
  }
  void prepare_next(const Batch& next) override { engine_->prepare_next(next); }

 private:
  std::unique_ptr<gpu_model::GpuDlrm> engine_;
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
  return std::make_unique<DistributedGpuDlrm>(std::make_unique<gpu_model::GpuDlrm>(model, optim, opts, &data_parallel), host);
}

}  // namespace hetrec

