#include "model/gpu/gpu_dlrm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/seed_streams.h"
#include "data/batch_checks.h"
#include "data/batch_fingerprint.h"
#include "data/batch_slice.h"
#include "gemm/device_probe.h"
#include "gpu/caching_allocator.h"
#include "gpu/device.h"
#include "gpu/device_buffer.h"
#include "gpu/event.h"
#include "gpu/graph.h"
#include "gpu/memory.h"
#include "gpu/stream.h"
#include "hw/hardware.h"
#include "kernels/auc.h"
#include "kernels/bce_loss.h"
#include "kernels/column_sum.h"
#include "kernels/dot_interaction.h"
#include "kernels/embedding_bag_backward.h"
#include "kernels/embedding_bag_forward.h"
#include "kernels/loss_scale.h"
#include "model/gpu/tuned_kernels.h"
#include "model/gpu/model_small_gemms.h"
#include "model/gpu/tuned_small_gemms.h"
#include "kernels/step_scalars.h"
#include "model/describe.h"
#include "model/dlrm.h"
#include "model/gpu/batch_staging.h"
#include "model/gpu/dense_parameters.h"
#include "model/gpu/gpu_cross_net.h"
#include "model/gpu/gpu_embeddings.h"
#include "model/gpu/gpu_mlp.h"
#include "model/gpu/sharded_embeddings.h"
#include "model/gpu/step_output.h"
#include "perf/gemm_model_params.h"
#include "nn/cross_net.h"
#include "nn/mlp.h"
#include "optim/dense_optimizer.h"

namespace hetrec {
namespace {

// The dense initialisation streams of model/dlrm.cpp (core/seed_streams.h), so the GPU
// model starts from the CPU model's values.
using seed_streams::kBottomMlpStreams;
using seed_streams::kCrossNetStreams;
using seed_streams::kTopMlpStreams;
// What the step copies back to the host (model/gpu/step_output.h).
using gpu_model::StepOutput;

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
constexpr const char* kPhaseNames[kPhaseCount] = {
    "",          "bottom_mlp_fwd",  "embedding_fwd",  "embedding_exchange", "interaction_fwd",        "top_mlp_fwd",
    "loss",      "top_mlp_bwd",     "interaction_bwd", "bottom_mlp_bwd",    "dense_all_reduce",
    "embedding_grad_exchange", "embedding_bwd_update", "dense_optimizer"};
// Phases that exist only in data-parallel steps (not reported on one device).
bool data_parallel_phase(int p) { return p == kEmbeddingExchange || p == kDenseAllReduce || p == kGradientExchange; }

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
          const DataParallel* data_parallel = nullptr)
      : config_(model),
        optim_(optim),
        options_(options),
        props_(select_device(options.device)),
        memory_at_start_(gpu::memory_info()),
        alloc_(options.device),
        gemm_(alloc_),
        // Data parallel: dense features and labels of the rank's samples only (the shards'
        // bags are staged by ShardedGpuEmbeddings).
        staging_(model.num_dense, data_parallel ? 0 : model.num_tables(), alloc_),
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
    if (data_parallel) {
      data_parallel_ = *data_parallel;
      sharded_ = std::make_unique<gpu_model::ShardedGpuEmbeddings>(model, optim, data_parallel->plan,
                                                                   data_parallel->devices->rank(),
                                                                   data_parallel->devices->communicator(), alloc_, s);
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

  ~GpuDlrm() override {
    try {
      compute_.synchronize();
      embedding_stream_.synchronize();
      copy_.synchronize();
    } catch (const Error&) {
      // A device error is already being reported elsewhere; the destructor must not throw.
    }
  }

  double train_step(const Batch& batch, const StepRates& rates) override {
    const Batch* next = std::exchange(next_, nullptr);
    check_batch(batch, /*need_labels=*/true);
    take_back_state();
    const auto upload_start = std::chrono::steady_clock::now();
    // Packed during the previous step (prepare_next), or now. Data parallel: `batch` is the
    // global batch; this rank computes its share.
    const int64_t b = packed_ && *packed_ == batch_fingerprint(batch) ? packed_samples_ : pack(batch, /*training=*/true);
    packed_.reset();
    copy_packed();
    if (options_.profile_phases) {
      batch_ready_.synchronize();
      upload_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - upload_start).count();
    }

    int64_t& step = step_.data<int64_t>()[0];
    *scalars_host_.as<kernels::StepScalars>() =
        kernels::make_step_scalars(rates.sparse_lr, rates.dense_lr, optim_.beta1, optim_.beta2, step);
    const gpu::stream_t s = compute_.get();
    compute_.wait(batch_ready_);

    // A graph serves one global batch size (the exchanges' sizes depend on every rank's share).
    const int64_t key = batch.size;
    if (!options_.cuda_graph || options_.profile_phases) {
      enqueue_step(b);
    } else if (graph_.ready() && graph_batch_ == key) {
      graph_.launch(s);
    } else if (eager_batch_ == key) {
      // The second step of this size: everything it touches exists, capture and replay.
      graph_.begin_capture(s);
      try {
        enqueue_step(b);
      } catch (...) {
        try {
          graph_.end_capture(s);
        } catch (const Error&) {
        }
        invalidate_graph();
        throw;
      }
      graph_.end_capture(s);
      graph_batch_ = key;
      graph_.launch(s);
    } else {
      enqueue_step(b);  // first step of this size: eager (plans GEMMs, warms every path)
      eager_batch_ = key;
    }
    pack_next(next);
    finish("train step " + std::to_string(step_.data<int64_t>()[0]));

    const StepOutput out = *output_host_.as<StepOutput>();
    if (out.skipped) {
      validate_ids(batch);  // throws DataError naming the table, sample and id
      if (out.overflow && std::isfinite(out.loss)) {
        // fp16: the scaled gradients overflowed; nothing was updated and the scale was
        // halved on the device. Like torch's GradScaler, the optimizer step does not count.
        ++overflow_skipped_steps_;
        return out.loss;
      }
      if (std::isfinite(out.loss))
        throw DataError("train step " + std::to_string(step) + " (batch from sample " +
                        std::to_string(batch.first_sample) + "): the device skipped the update");
    }
    if (!std::isfinite(out.loss))
      throw NumericError("train step " + std::to_string(step) + " (batch from sample " +
                         std::to_string(batch.first_sample) + "): the loss is " + std::to_string(out.loss) +
                         "; no update was applied");
    ++step;
    return out.loss;
  }

  void predict(const Batch& batch, std::span<float> logits) override {
    check_batch(batch, /*need_labels=*/false);
    if (static_cast<int64_t>(logits.size()) != batch.size)
      throw InternalError("predict: " + std::to_string(logits.size()) + " logits for a batch of " +
                          std::to_string(batch.size));
    if (sharded_ && batch.size < ranks()) {
      // Fewer samples than ranks (the end of an evaluation set): every rank needs one, so
      // the last sample is repeated and its extra logits dropped.
      check_bag_offsets(batch, config_.num_tables());
      std::vector<int64_t> samples(static_cast<std::size_t>(ranks()));
      for (std::size_t i = 0; i < samples.size(); ++i) samples[i] = std::min<int64_t>(static_cast<int64_t>(i), batch.size - 1);
      std::vector<float> all(samples.size());
      predict(select_samples(batch, samples), all);
      std::copy(all.begin(), all.begin() + batch.size, logits.begin());
      return;
    }
    take_back_state();
    next_ = nullptr;
    const int64_t b = pack(batch, /*training=*/false);  // replaces a batch packed ahead
    packed_.reset();
    copy_packed();
    compute_.wait(batch_ready_);
    const gpu::stream_t s = compute_.get();
    gpu::memset_async(scalars_.raw(), 0, sizeof(kernels::StepScalars), s);
    const float* out = forward(b);
    if (sharded_) {
      // Every rank receives every sample's logit, and skips (throws) together.
      if (all_logits_.numel() < batch.size) all_logits_ = Tensor::empty({batch.size}, DType::f32, alloc_);
      std::vector<int64_t> bytes(static_cast<std::size_t>(ranks()));
      for (int h = 0; h < ranks(); ++h)
        bytes[static_cast<std::size_t>(h)] =
            (share_begin(batch.size, h + 1, ranks()) - share_begin(batch.size, h, ranks())) * int64_t{sizeof(float)};
      gpu::Communicator& comm = data_parallel_.devices->communicator();
      comm.all_gather_v(out, b * int64_t{sizeof(float)}, all_logits_.raw(), bytes, s);
      comm.all_reduce_sum(&device_scalars()->skip_update, 1, gpu::ReduceType::i32, s);
      out = all_logits_.data<float>();
    }
    gpu::memcpy_async(logits.data(), out, logits.size() * sizeof(float), gpu::CopyKind::device_to_host, s);
    copy_skip_flag(s);
    finish("predict (batch from sample " + std::to_string(batch.first_sample) + ")");
    if (output_host_.as<StepOutput>()->skipped) {
      validate_ids(batch);
      throw DataError("predict (batch from sample " + std::to_string(batch.first_sample) +
                      "): ids outside their tables reached the device");
    }
  }

  void prepare_next(const Batch& next) override { next_ = &next; }

  // Data parallel: the replicated tensors only (the tables are in embedding_shards()).
  std::vector<NamedTensor> state() override {
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
  std::vector<ShardTensor> embedding_shards() {
    expose_state();
    return sharded_->shard_tensors();
  }

  // Data parallel, collective over the host group: the state one device would hold.
  std::vector<NamedTensor> gather_full_state() {
    std::vector<NamedTensor> out = state();
    const NamedTensor step = out.back();
    out.pop_back();
    for (auto& t : gather_full_tables(embedding_shards(), config_.embedding_spec(), optim_.sparse, *data_parallel_.host))
      out.push_back(std::move(t));
    out.push_back(step);
    return out;
  }

  const ModelConfig& config() const override { return config_; }

  cublaslt::Gemm::SelectionCounts gemm_selection_counts() const override { return gemm_.selection_counts(); }

  std::vector<gpu_model::SmallGemmDecision> small_gemm_decisions() const override {
    std::vector<gpu_model::SmallGemmDecision> out = bottom_->small_gemm_decisions("bottom_mlp");
    for (auto& d : top_->small_gemm_decisions("top_mlp")) out.push_back(std::move(d));
    return out;
  }

  std::vector<std::pair<std::string, double>> phase_ms() const override {
    std::vector<std::pair<std::string, double>> out;
    if (!options_.profile_phases) return out;
    out.emplace_back("upload", upload_ms_);
    for (int p = 1; p < kPhaseCount; ++p)
      if (sharded_ || !data_parallel_phase(p))
        out.emplace_back(kPhaseNames[p], gpu::Event::elapsed_ms(phase_events_[static_cast<std::size_t>(p - 1)],
                                                              phase_events_[static_cast<std::size_t>(p)]));
    return out;
  }

  double loss_scale() const override {
    if (!loss_scale_.defined()) return 1.0;
    kernels::LossScaleState st;
    gpu::memcpy_sync(&st, loss_scale_.raw(), sizeof(st), gpu::CopyKind::device_to_host);
    return st.scale;
  }
  int64_t overflow_skipped_steps() const override { return overflow_skipped_steps_; }

  std::optional<double> device_roc_auc(std::span<const float> scores, std::span<const float> labels) override {
    if (scores.size() != labels.size()) throw InternalError("device_roc_auc: scores and labels differ in length");
    if (scores.empty()) return std::numeric_limits<double>::quiet_NaN();
    const auto n = static_cast<int64_t>(scores.size());
    // Evaluation-time buffers straight from the driver and freed at once, so they never
    // stay cached in the training step's allocator (nor count in its peak).
    gpu::DeviceBuffer d_scores(scores.size_bytes()), d_labels(labels.size_bytes()), d_auc(sizeof(double));
    gpu::DeviceBuffer workspace(kernels::roc_auc_workspace_bytes(n));
    const gpu::stream_t s = compute_.get();
    gpu::memcpy_async(d_scores.get(), scores.data(), scores.size_bytes(), gpu::CopyKind::host_to_device, s);
    gpu::memcpy_async(d_labels.get(), labels.data(), labels.size_bytes(), gpu::CopyKind::host_to_device, s);
    kernels::roc_auc(d_scores.as<float>(), d_labels.as<float>(), n, d_auc.as<double>(), workspace.get(),
                     workspace.bytes(), s);
    double auc = 0.0;
    gpu::memcpy_async(&auc, d_auc.get(), sizeof(double), gpu::CopyKind::device_to_host, s);
    compute_.synchronize();
    return auc;
  }

  std::optional<DeviceMemoryReport> device_memory() const override {
    const gpu::AllocatorStats a = alloc_.stats();
    const gpu::MemoryInfo now = gpu::memory_info();
    DeviceMemoryReport r;
    r.allocator_peak_bytes = static_cast<int64_t>(a.peak_bytes_in_use);
    r.allocator_reserved_bytes = static_cast<int64_t>(a.bytes_reserved);
    r.device_used_at_start_bytes = static_cast<int64_t>(memory_at_start_.total_bytes - memory_at_start_.free_bytes);
    r.device_used_bytes = static_cast<int64_t>(now.total_bytes - now.free_bytes);
    r.device_total_bytes = static_cast<int64_t>(now.total_bytes);
    r.outside_allocator_bytes = r.device_used_bytes - r.device_used_at_start_bytes - r.allocator_reserved_bytes;
    r.host_table_bytes = sharded_ ? sharded_->host_bytes() : static_cast<int64_t>(embeddings_->host_bytes());
    return r;
  }

  std::string describe() const override {
    const ModelConfig& m = config_;
    std::string s = m.arch == Arch::dlrm ? "DLRM" : "DLRM-DCNv2";
    const char* mode = options_.profile_phases ? ", eager steps with phase timing"
                       : options_.cuda_graph      ? ", graph-captured steps"
                                                  : ", eager steps";
    s += " (gpu " + std::to_string(props_.index) + ": " + props_.name + ", " + precision_name(options_.precision) +
         " GEMMs" + mode + "): " + describe_network(m) + "; " + std::to_string(dense_->total_elements()) +
         " dense parameters, dense optimizer " + dense_->optimizer_name();
    if (options_.precision == cublaslt::Precision::bf16 || options_.precision == cublaslt::Precision::fp16) {
      // Which layers fell back to fp32 GEMMs (widths not multiples of 8).
      std::string fp32_layers;
      const auto note = [&](const gpu_model::GpuMlp& mlp, const char* name) {
        for (int i = 0; i < mlp.num_layers(); ++i)
          if (!mlp.layer_16bit(i)) fp32_layers += std::string(fp32_layers.empty() ? "" : ", ") + name + "[" + std::to_string(i) + "]";
      };
      note(*bottom_, "bottom_mlp");
      note(*top_, "top_mlp");
      if (cross_ && !cross_->half()) fp32_layers += std::string(fp32_layers.empty() ? "" : ", ") + "cross_net";
      s += std::string("; ") + precision_name(options_.precision) + " GEMMs with fp32 master weights" +
           (fp32_layers.empty() ? std::string() : " (fp32 GEMMs in " + fp32_layers + ")");
      if (loss_scale_.defined())
        s += ", dynamic loss scaling (initial scale " + std::to_string(static_cast<int64_t>(optim_.loss_scale)) +
             ", doubled after " + std::to_string(optim_.loss_scale_growth_interval) + " steps without overflow)";
    }
    const int host = sharded_ ? sharded_->host_table_count() : embeddings_->host_table_count();
    if (sharded_) {
      s += "; data parallel over " + std::to_string(ranks()) + " GPUs (" + data_parallel_.devices->describe() +
           "), tables " + sharded_->describe();
      if (host > 0)
        s += "; " + std::to_string(host) + " shards on this rank in mapped host memory (" +
             std::to_string(sharded_->host_bytes() / (1024 * 1024)) + " MiB with their optimizer state)";
    } else if (host > 0) {
      std::string names;
      for (int t = 0; t < m.num_tables(); ++t)
        if (embeddings_->on_host(t)) names += (names.empty() ? "" : ", ") + m.tables[static_cast<std::size_t>(t)].name;
      s += "; " + std::to_string(host) + " of " + std::to_string(m.num_tables()) +
           " tables in mapped host memory (" + names + ", " +
           std::to_string(embeddings_->host_bytes() / (1024 * 1024)) + " MiB with their optimizer state)";
    } else {
      s += "; every table in device memory";
    }
    if (!tuned_.note.empty()) s += "; " + tuned_.note;
    if (!small_gemms_.note.empty()) s += "; " + small_gemms_.note;
    return s;
  }

 private:
  // The GEMMs of the bottom (or top) MLP's narrow layers that the small-GEMM kernels can
  // run: fp32 layers only (a 16-bit layer stays on cuBLASLt); the bottom MLP has no input
  // gradient.
  std::vector<tune::SmallGemmLayerGemm> narrow_gemms(bool bottom_mlp) const {
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
  void choose_small_gemms_by_model(int64_t batch) {
    if (!model_selection_ || small_gemms_by_model_) return;
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
  void select_gemms_by_model(const ModelConfig& model) {
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
    gemm_.use_model_selection(std::move(hw), std::move(params), cache);
  }

  static gpu::DeviceProperties select_device(int index) {
    const int count = gpu::device_count();
    if (count == 0) throw DeviceError("GPU model: no GPU device is visible");
    if (index < 0 || index >= count)
      throw ConfigError("GPU model: device " + std::to_string(index) + " requested, " + std::to_string(count) +
                        " visible");
    gpu::set_device(index);
    return gpu::device_properties(index);
  }

  void check_batch(const Batch& batch, bool need_labels) const {
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
  void take_back_state() {
    if (!state_exposed_) return;
    const gpu::stream_t s = compute_.get();
    gpu_model::upload(dense_->parameter_mirrors(), s);
    gpu_model::upload(dense_->slot_mirrors(), s);
    gpu_model::upload(sharded_ ? sharded_->mirrors() : embeddings_->mirrors(), s);
    dense_->refresh_16bit(s);
    compute_.synchronize();
    state_exposed_ = false;
  }

  int ranks() const { return data_parallel_.devices ? data_parallel_.devices->size() : 1; }

  // Packs what the step reads into the staging memory (the host's share of staging);
  // returns this rank's sample count. Data parallel: dense features and labels of the
  // rank's share of the global batch, the shards' bags for every sample. Ids are
  // range-checked on the device (a bad one raises the skip flag); the offsets must be
  // sound before anything reads through them.
  int64_t pack(const Batch& batch, bool training) {
    check_bag_offsets(batch, config_.num_tables());
    int64_t b = batch.size;
    if (sharded_) {
      const int n = ranks(), r = data_parallel_.devices->rank();
      if (batch.size < n)
        throw DataError("batch from sample " + std::to_string(batch.first_sample) + ": " + std::to_string(batch.size) +
                        " samples for " + std::to_string(n) + " GPUs; the data-parallel GPU backend needs at least "
                        "one sample per rank");
      const int64_t begin = share_begin(batch.size, r, n);
      b = share_begin(batch.size, r + 1, n) - begin;
      staging_.pack_dense(batch, begin, b, training);
      sharded_->pack(batch, begin, b, training);
      packed_global_ = batch.size;
    } else {
      staging_.pack(batch, training);
    }
    packed_samples_ = b;
    return b;
  }

  // Copies the packed batch to the device and sizes the buffers for it.
  void copy_packed() {
    bool moved = staging_.copy_packed(copy_, batch_ready_);
    if (sharded_) {
      moved |= sharded_->copy_packed(copy_, batch_ready_, compute_.get());
      global_batch_ = packed_global_;
    }
    moved |= reserve(packed_samples_, sharded_ ? 0 : staging_.device().bags.max_ids);
    if (moved) invalidate_graph();
  }

  // While the device runs the step just enqueued: packs the batch prepare_next named and
  // copies it to the device, so the next train_step only moves it on the device. A batch that cannot be packed is left for that
  // train_step, which reports the error as its own.
  void pack_next(const Batch* next) {
    if (!next) return;
    try {
      if (next->labels.size() != static_cast<std::size_t>(next->size)) return;
      pack(*next, /*training=*/true);
      packed_ = batch_fingerprint(*next);
      // Its copies to the device start now, beside the step (into landing buffers: the
      // step reads the step buffers), so the next step starts with device copies only.
      staging_.copy_ahead(copy_);
      if (sharded_) sharded_->copy_ahead(copy_);
    } catch (const Error&) {
      packed_.reset();
    }
  }

  // Waits for the step's device work; data parallel, bounded by the collective timeout
  // (a rank that died or hangs ends the step with a DeviceError naming `op`).
  void finish(const std::string& op) {
    if (sharded_)
      data_parallel_.devices->communicator().wait(compute_.get(), op, data_parallel_.devices->timeout_s());
    else
      compute_.synchronize();
  }

  void validate_ids(const Batch& batch) const {
    if (sharded_) sharded_->validate(batch);
    else embeddings_->validate(batch);
  }

  void expose_state() {
    if (state_exposed_) return;
    const gpu::stream_t s = compute_.get();
    gpu_model::download(dense_->parameter_mirrors(), s);
    gpu_model::download(dense_->slot_mirrors(), s);
    gpu_model::download(sharded_ ? sharded_->mirrors() : embeddings_->mirrors(), s);
    compute_.synchronize();
    state_exposed_ = true;
  }

  void invalidate_graph() {
    graph_.reset();
    graph_batch_ = -1;
    eager_batch_ = -1;
  }

  // Activation, gradient and scratch buffers for `batch` samples and `max_ids` ids.
  // Returns true when any buffer was (re)allocated.
  bool reserve(int64_t batch, int64_t max_ids) {
    bool changed = false;
    const int64_t dim = config_.embedding_dim;
    const int64_t fd = (config_.num_tables() + 1) * dim;
    const int64_t width = config_.interaction_width();
    if (batch > capacity_) {
      choose_small_gemms_by_model(batch);
      bottom_->reserve(batch, alloc_);
      top_->reserve(batch, alloc_);
      if (cross_) cross_->reserve(batch, alloc_);
      features_ = Tensor::empty({batch, fd}, DType::f32, alloc_);
      grad_features_ = Tensor::empty({batch, fd}, DType::f32, alloc_);
      if (config_.arch == Arch::dlrm) interaction_ = Tensor::empty({batch, width}, DType::f32, alloc_);
      grad_logits_ = Tensor::empty({batch}, DType::f32, alloc_);
      grad_top_in_ = Tensor::empty({batch, width}, DType::f32, alloc_);
      int64_t widest = std::max<int64_t>({fd, width, bottom_->max_width(), top_->max_width()});
      scratch_ = Tensor::empty({static_cast<int64_t>(kernels::column_sum_workspace_bytes(batch, widest)) + 1},
                               DType::u8, alloc_);
      bce_workspace_ = Tensor::empty({static_cast<int64_t>(kernels::bce_loss_workspace_bytes(batch))}, DType::u8, alloc_);
      capacity_ = batch;
      changed = true;
    }
    if (max_ids > id_capacity_) {
      embedding_workspace_ =
          Tensor::empty({static_cast<int64_t>(kernels::embedding_backward_workspace_bytes(max_ids, config_.embedding_dim))},
                        DType::u8, alloc_);
      id_capacity_ = max_ids;
      changed = true;
    }
    return changed;
  }

  // Records the end of `phase` when profiling (never while capturing: profiling steps
  // run eagerly).
  void mark(Phase phase) {
    if (options_.profile_phases) phase_events_[static_cast<std::size_t>(phase)].record(compute_.get());
  }

  kernels::StepScalars* device_scalars() const { return reinterpret_cast<kernels::StepScalars*>(scalars_.raw()); }
  StepOutput* device_output() const { return reinterpret_cast<StepOutput*>(output_.raw()); }
  kernels::LossScaleState* device_loss_scale() const {
    return loss_scale_.defined() ? reinterpret_cast<kernels::LossScaleState*>(loss_scale_.raw()) : nullptr;
  }

  // Bottom MLP, embeddings, interaction, top MLP. Returns the logits (batch x 1).
  const float* forward(int64_t batch) {
    const gpu::stream_t s = compute_.get();
    const gpu_model::DeviceBatch& db = staging_.device();
    const int64_t dim = config_.embedding_dim;
    const int64_t fd = (config_.num_tables() + 1) * dim;
    const int64_t width = config_.interaction_width();
    float* x = features_.data<float>();
    // Row b of X: [bottom output, pooled table 0, ..., pooled table T-1]; both producers
    // write into it directly.
    if (overlapped()) {
      // The lookups and their exchange on the embedding stream, beside the bottom MLP:
      // they write X's table slots, the bottom MLP its slot 0.
      const gpu::stream_t e = embedding_stream_.get();
      fork_.record(s);
      embedding_stream_.wait(fork_);
      sharded_->lookup(&device_scalars()->skip_update, e, tuned_.embedding_forward.get());
      sharded_->exchange_pooled(x + dim, fd, e);
      embeddings_ready_.record(e);
      bottom_->forward(gemm_, db.dense, config_.num_dense, batch, x, fd, s);
      compute_.wait(embeddings_ready_);
    } else {
      bottom_->forward(gemm_, db.dense, config_.num_dense, batch, x, fd, s);
    }
    mark(kBottomForward);
    if (overlapped()) {
      mark(kEmbeddingForward);
      mark(kEmbeddingExchange);
    } else if (sharded_) {
      sharded_->lookup(&device_scalars()->skip_update, s, tuned_.embedding_forward.get());
      mark(kEmbeddingForward);
      sharded_->exchange_pooled(x + dim, fd, s);
      mark(kEmbeddingExchange);
    } else {
      kernels::PooledView pooled;
      pooled.data = x + dim;
      pooled.row_stride = fd;
      pooled.dtype = DType::f32;
      kernels::embedding_bag_forward(embeddings_->tables(), db.bags, pooled, &device_scalars()->skip_update, s,
                                     tuned_.embedding_forward.get());
      mark(kEmbeddingForward);
      mark(kEmbeddingExchange);
    }
    if (config_.arch == Arch::dlrm) {
      dot_shape_.batch = batch;
      kernels::dot_interaction_forward(dot_shape_, x, fd, interaction_.data<float>(), width, s,
                                       tuned_.dot_forward.get());
      top_in_ = interaction_.data<float>();
    } else {
      top_in_ = cross_ ? cross_->forward(gemm_, x, batch, s) : x;
    }
    mark(kInteractionForward);
    const float* logits =
        top_->forward(gemm_, top_in_, width, batch, nullptr, 0, s, cross_ ? cross_->output16() : nullptr);
    mark(kTopForward);
    return logits;
  }

  // Everything a training step does on the device, in stream order (graph-capturable:
  // no allocation, no synchronisation, per-step values read from device memory).
  void enqueue_step(int64_t batch) {
    const gpu::stream_t s = compute_.get();
    const gpu_model::DeviceBatch& db = staging_.device();
    const int64_t dim = config_.embedding_dim;
    const int64_t fd = (config_.num_tables() + 1) * dim;
    const int64_t width = config_.interaction_width();
    kernels::StepScalars* scalars = device_scalars();
    gpu::memcpy_async(scalars, scalars_host_.get(), sizeof(kernels::StepScalars), gpu::CopyKind::host_to_device, s);
    gpu::memset_async(output_.raw(), 0, sizeof(StepOutput), s);
    kernels::LossScaleState* loss_scale = device_loss_scale();
    if (loss_scale) gpu::memset_async(&loss_scale->overflow, 0, sizeof(int32_t), s);
    mark(kStart);

    const float* logits = forward(batch);
    kernels::bce_with_logits(logits, 1, db.labels, batch, grad_logits_.data<float>(), 1, &device_output()->loss,
                             &scalars->skip_update, bce_workspace_.raw(), bce_workspace_.nbytes(), s,
                             loss_scale ? &loss_scale->scale : nullptr, sharded_ ? global_batch_ : 0);
    mark(kLoss);

    const gpu_model::Scratch scratch{scratch_.raw(), scratch_.nbytes()};
    float* grad_top_in = grad_top_in_.data<float>();
    top_->backward(gemm_, top_in_, width, grad_logits_.data<float>(), 1, grad_top_in, width, batch, scratch, s);
    mark(kTopBackward);
    float* grad_x = grad_features_.data<float>();
    if (config_.arch == Arch::dlrm) {
      kernels::dot_interaction_backward(dot_shape_, features_.data<float>(), fd, grad_top_in, width, grad_x, fd, s,
                                        tuned_.dot_backward.get());
    } else if (cross_) {
      cross_->backward(gemm_, features_.data<float>(), grad_top_in, grad_x, batch, scratch, s);
    } else {
      grad_x = grad_top_in;  // the concatenation is the top MLP's input
    }
    mark(kInteractionBackward);
    gpu::Communicator* comm = sharded_ ? &data_parallel_.devices->communicator() : nullptr;
    // Without loss scaling the skip flag is settled by the loss, so the embedding backward
    // starts beside the bottom MLP's; with it, only after every gradient is checked.
    if (overlapped() && !loss_scale) start_embedding_backward(*comm, grad_x + dim, fd, scalars, loss_scale);
    bottom_->backward(gemm_, db.dense, config_.num_dense, grad_x, fd, nullptr, 0, batch, scratch, s);
    if (loss_scale) {
      // Every gradient an update reads, back to its true size; an overflow anywhere
      // raises the skip flag before the first update runs.
      kernels::unscale_and_check(dense_->flat_grads(), 1, dense_->flat_elements(), dense_->flat_elements(), loss_scale,
                                 &scalars->skip_update, s);
      kernels::unscale_and_check(grad_x + dim, batch, fd - dim, fd, loss_scale, &scalars->skip_update, s);
    }
    mark(kBottomBackward);
    if (overlapped()) {
      if (loss_scale) start_embedding_backward(*comm, grad_x + dim, fd, scalars, loss_scale);
      // The dense all-reduce follows the embedding stream's collectives (one order of
      // collectives on the communicator), then runs beside the embedding update.
      compute_.wait(flags_agreed_);
      comm->all_reduce_sum(dense_->flat_grads(), static_cast<std::size_t>(dense_->flat_elements()),
                           gpu::ReduceType::f32, s);
    } else if (comm) {
      // The dense gradients of the global-batch mean loss, summed over ranks.
      comm->all_reduce_sum(dense_->flat_grads(), static_cast<std::size_t>(dense_->flat_elements()),
                           gpu::ReduceType::f32, s);
      mark(kDenseAllReduce);
      sharded_->exchange_gradients(grad_x + dim, fd, s);
      // Every rank skips the update when any rank found a bad id, a non-finite loss or an
      // fp16 overflow, so the replicas stay identical; the loss is the global mean.
      comm->all_reduce_sum(&scalars->skip_update, 1, gpu::ReduceType::i32, s);
      if (loss_scale) comm->all_reduce_sum(&loss_scale->overflow, 1, gpu::ReduceType::i32, s);
      comm->all_reduce_sum(&device_output()->loss, 1, gpu::ReduceType::f64, s);
      mark(kGradientExchange);
      sharded_->update(scalars, s, tuned_.sparse_update.get());
    } else {
      mark(kDenseAllReduce);
      mark(kGradientExchange);
      kernels::embedding_bag_backward_update(embeddings_->tables(), db.bags, grad_x + dim, fd,
                                             embeddings_->optimizer(scalars), embedding_workspace_.raw(),
                                             embedding_workspace_.nbytes(), s, tuned_.sparse_update.get());
    }
    mark(kEmbeddingBackward);
    dense_->step(scalars, s);
    if (loss_scale) {
      kernels::update_loss_scale(loss_scale, loss_scale_rule_, s);
      gpu::memcpy_async(&output_host_.as<StepOutput>()->overflow, &loss_scale->overflow, sizeof(int32_t),
                        gpu::CopyKind::device_to_host, s);
    }
    if (overlapped()) compute_.wait(update_done_);
    mark(kDenseOptimizer);
    gpu::memcpy_async(&output_host_.as<StepOutput>()->loss, &device_output()->loss, sizeof(double),
                      gpu::CopyKind::device_to_host, s);
    copy_skip_flag(s);
  }

  // Lookups, exchanges and the embedding update on their own stream (data parallel,
  // options.overlap_exchanges, not profiling).
  bool overlapped() const { return sharded_ && options_.overlap_exchanges && !options_.profile_phases; }

  // On the embedding stream, once the compute stream has the tables' slot gradients: the
  // gradient exchange, the agreement on the skip (and overflow) flags and the loss, then
  // the update. flags_agreed_ marks the end of its collectives, update_done_ its end.
  void start_embedding_backward(gpu::Communicator& comm, const float* grad_slots, int64_t stride,
                                kernels::StepScalars* scalars, kernels::LossScaleState* loss_scale) {
    const gpu::stream_t e = embedding_stream_.get();
    fork_.record(compute_.get());
    embedding_stream_.wait(fork_);
    sharded_->exchange_gradients(grad_slots, stride, e);
    comm.all_reduce_sum(&scalars->skip_update, 1, gpu::ReduceType::i32, e);
    if (loss_scale) comm.all_reduce_sum(&loss_scale->overflow, 1, gpu::ReduceType::i32, e);
    comm.all_reduce_sum(&device_output()->loss, 1, gpu::ReduceType::f64, e);
    flags_agreed_.record(e);
    sharded_->update(scalars, e, tuned_.sparse_update.get());
    update_done_.record(e);
  }

  void copy_skip_flag(gpu::stream_t s) {
    gpu::memcpy_async(&output_host_.as<StepOutput>()->skipped, &device_scalars()->skip_update, sizeof(int32_t),
                      gpu::CopyKind::device_to_host, s);
  }

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
  gpu::Event batch_ready_{false};
  cublaslt::Gemm gemm_;
  gpu_model::BatchStaging staging_;
  std::unique_ptr<gpu_model::DenseParameters> dense_;
  std::unique_ptr<gpu_model::GpuMlp> bottom_;
  std::unique_ptr<gpu_model::GpuCrossNet> cross_;
  std::unique_ptr<gpu_model::GpuMlp> top_;
  std::unique_ptr<gpu_model::GpuEmbeddings> embeddings_;       // one device: every table
  std::unique_ptr<gpu_model::ShardedGpuEmbeddings> sharded_;   // data parallel: this rank's shards
  DataParallel data_parallel_;
  int64_t global_batch_ = 0;    // data parallel: samples of the global batch on the device
  int64_t packed_global_ = 0;   // data parallel: samples of the packed global batch
  int64_t packed_samples_ = 0;  // this rank's samples of the packed batch
  const Batch* next_ = nullptr;                 // prepare_next: the batch to pack during the next step
  std::optional<BatchFingerprint> packed_;      // the batch packed ahead, if any
  Tensor all_logits_;           // data parallel: every sample's logit (predict)
  gpu_model::TunedKernels tuned_;
  gpu_model::TunedSmallGemms small_gemms_;  // the MLPs hold pointers to its kernels
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

  gpu::GraphExec graph_;
  int64_t graph_batch_ = -1;  // batch size the captured graph serves
  int64_t eager_batch_ = -1;  // batch size of the last eager step
  bool state_exposed_ = false;
  std::vector<gpu::Event> phase_events_ = std::vector<gpu::Event>(kPhaseCount);
  double upload_ms_ = 0.0;
};

// The data-parallel interface over the same engine (DistributedModel and GpuModel are
// separate Model interfaces, so this one forwards to the engine it owns).
class DistributedGpuDlrm final : public DistributedGpuModel {
 public:
  DistributedGpuDlrm(std::unique_ptr<GpuDlrm> engine, dist::ProcessGroup& host)
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
  std::unique_ptr<GpuDlrm> engine_;
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
  return std::make_unique<GpuDlrm>(model, optim, checked_options(model, optim, options));
}

std::unique_ptr<DistributedGpuModel> make_distributed_gpu_model(const ModelConfig& model, const OptimConfig& optim,
                                                             const GpuModelOptions& options,
                                                             const dist::ShardingPlan& plan,
                                                             dist::ProcessGroup& host, dist::NcclProcessGroup& devices) {
  if (host.size() != devices.size() || host.rank() != devices.rank() || plan.world_size != devices.size())
    throw InternalError("data-parallel GPU model: host group, device group and sharding plan disagree on the ranks");
  GpuModelOptions opts = checked_options(model, optim, options);
  opts.device = devices.device();
  DataParallel data_parallel{&host, &devices, plan};
  return std::make_unique<DistributedGpuDlrm>(std::make_unique<GpuDlrm>(model, optim, opts, &data_parallel), host);
}

}  // namespace hetrec
