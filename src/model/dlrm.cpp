#include "model/dlrm.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/seed_streams.h"
#include "data/batch_checks.h"
#include "data/batch_slice.h"
#include "model/describe.h"
#include "nn/bce_loss.h"
#include "nn/cross_net.h"
#include "nn/dot_interaction.h"
#include "nn/embedding_collection.h"
#include "nn/mlp.h"
#include "nn/parallel_threshold.h"
#include "optim/dense_optimizer.h"

namespace hetrec::inline model {
namespace {

// The dense layers draw from seed_streams::dense_init_seed(init_seed), apart from the
// tables; each module from its own block of streams, one stream per layer.
using seed_streams::kBottomMlpStreams;
using seed_streams::kCrossNetStreams;
using seed_streams::kTopMlpStreams;

void check_widths(const std::vector<int>& widths, const char* key) {
  if (widths.empty()) throw ConfigError(std::string(key) + ": expected at least one layer width, got none");
  for (std::size_t i = 0; i < widths.size(); ++i)
    if (widths[i] <= 0)
      throw ConfigError(std::string(key) + "[" + std::to_string(i) + "] = " + std::to_string(widths[i]) +
                        ": expected a positive layer width");
}

// Vectors of the workspace start as NaN so that an element read before it is written
// shows up in the loss.
void reserve_poisoned(std::vector<float>& v, int64_t n) {
  v.assign(static_cast<std::size_t>(n), std::numeric_limits<float>::quiet_NaN());
}

// Dense gradients are summed over ranks in buckets of at most this many bytes (PyTorch
// DDP's default bucket_cap_mb is 25 MB; the CPU networks here are far smaller, so most
// models have one bucket per network).
constexpr int64_t kGradientBucketBytes = int64_t{25} << 20;

class CpuDlrm final : public DistributedModel {
 public:
  CpuDlrm(const ModelConfig& model, const OptimConfig& optim, const dist::ShardingPlan* plan = nullptr,
          dist::ProcessGroup* group = nullptr)
      : config_(model),
        bottom_mlp_(model.num_dense, model.bottom_mlp, /*relu_last=*/true),
        top_mlp_(model.interaction_width(), model.top_mlp, /*relu_last=*/false),
        group_(group),
        step_(Tensor::zeros({1}, DType::i64)) {
    if (group_) sharded_ = std::make_unique<ShardedEmbeddingCollection>(model.embedding_spec(), optim, model.init_seed, *plan, *group_);
    else embeddings_.emplace(model.embedding_spec(), optim, model.init_seed);
    const uint64_t dense_seed = seed_streams::dense_init_seed(model.init_seed);
    bottom_mlp_.init(dense_seed, kBottomMlpStreams);
    top_mlp_.init(dense_seed, kTopMlpStreams);
    const int dim = model.embedding_dim;
    if (model.arch == Arch::dlrm) {
      dot_.emplace(model.num_tables(), dim, model.interaction_self);
      HETREC_CHECK(dot_->output_width() == model.interaction_width(), "dot interaction width");
    } else if (model.cross_layers > 0) {
      cross_.emplace(model.interaction_width(), model.cross_layers, model.cross_rank);
      cross_->init(dense_seed, kCrossNetStreams);
    }
    std::vector<DenseParam> params = bottom_mlp_.parameters("bottom_mlp.");
    if (cross_)
      for (auto& p : cross_->parameters("cross_net.")) params.push_back(std::move(p));
    for (auto& p : top_mlp_.parameters("top_mlp.")) params.push_back(std::move(p));
    params_ = params;
    optimizer_ = DenseOptimizer::create(optim, std::move(params));
    if (group_) make_buckets();
  }

  double train_step(const Batch& global_batch, const StepRates& rates) override {
    check_batch_shape(global_batch, config_.num_dense, config_.num_tables(), /*need_labels=*/true);
    Batch local_storage;
    const Batch& batch = group_ ? (local_storage = local_slice(global_batch)) : global_batch;
    const int64_t b = batch.size;
    if (b == 0) return train_step_without_samples(global_batch, rates);
    const float* logits = forward(batch);
    double loss = bce_with_logits(logits, batch.labels.data(), b, grad_logits_.data());
    if (group_) {
      // The loss is the mean over the global batch: scale the local mean's gradient by
      // B_local / B_global, and average the loss over ranks weighted by their samples.
      const float scale = static_cast<float>(b) / static_cast<float>(global_batch.size);
      for (int64_t i = 0; i < b; ++i) grad_logits_[static_cast<std::size_t>(i)] *= scale;
      loss = dist::all_reduce_sum_value(*group_, loss * static_cast<double>(b), "all_reduce(loss)") /
             static_cast<double>(global_batch.size);
    }
    int64_t& step = step_.data<int64_t>()[0];
    if (!std::isfinite(loss))
      throw NumericError("train step " + std::to_string(step) + " (batch from sample " +
                         std::to_string(batch.first_sample) + "): the loss is " + std::to_string(loss) +
                         "; no update was applied");
    backward(batch);
    if (group_) {
      sharded_->backward_update(grad_pooled_.data(), rates.sparse_lr, step);
      finish_gradient_buckets();
    } else {
      embeddings_->backward_update(batch, grad_pooled_.data(), rates.sparse_lr, step);
    }
    optimizer_->step(rates.dense_lr, step + 1);
    ++step;
    return loss;
  }

  void predict(const Batch& batch, std::span<float> logits) override {
    check_batch_shape(batch, config_.num_dense, config_.num_tables(), /*need_labels=*/false);
    if (static_cast<int64_t>(logits.size()) != batch.size)
      throw InternalError("predict: " + std::to_string(logits.size()) + " logits for a batch of " +
                          std::to_string(batch.size));
    if (!group_) {
      const float* out = forward(batch);
      std::copy(out, out + batch.size, logits.begin());
      return;
    }
    const Batch local = local_slice(batch);
    const float* out = nullptr;
    if (local.size > 0) out = forward(local);
    else sharded_->forward(local, nullptr);  // this rank still serves its shards
    const auto all = dist::all_gather_v(*group_, std::vector<float>(out, out + local.size), "all_gather(eval scores)");
    auto at = logits.begin();
    for (const auto& part : all) at = std::copy(part.begin(), part.end(), at);
  }

  std::vector<NamedTensor> state() override {
    std::vector<NamedTensor> out;
    for (const DenseParam& p : params_) out.push_back({p.name, p.value});
    for (auto& s : optimizer_->state()) out.push_back({std::move(s.name), std::move(s.tensor)});
    if (embeddings_)
      for (auto& s : embeddings_->state()) out.push_back(std::move(s));
    out.push_back({"step", step_});
    return out;
  }

  dist::ProcessGroup& group() override { return *group_; }
  std::vector<ShardTensor> embedding_shards() override { return sharded_->state(); }
  std::vector<NamedTensor> gather_full_state() override {
    std::vector<NamedTensor> out;
    for (const DenseParam& p : params_) out.push_back({p.name, p.value});
    for (auto& s : optimizer_->state()) out.push_back({std::move(s.name), std::move(s.tensor)});
    for (auto& s : sharded_->gather_full_state()) out.push_back(std::move(s));
    out.push_back({"step", step_});
    return out;
  }

  const ModelConfig& config() const override { return config_; }

  std::string describe() const override {
    const ModelConfig& m = config_;
    int64_t dense_params = 0;
    for (const DenseParam& p : params_) dense_params += p.value.numel();
    std::string s = m.arch == Arch::dlrm ? "DLRM" : "DLRM-DCNv2";
    s += " (cpu, fp32 dense";
    if (group_) s += ", data parallel over " + std::to_string(group_->size()) + " ranks";
    s += "): " + describe_network(m) + "; " + std::to_string(dense_params) +
         " dense parameters, dense optimizer " + optimizer_->name();
    return s;
  }

 private:
  void reserve(int64_t batch) {
    if (batch <= capacity_) return;
    const int64_t pooled = batch * config_.num_tables() * config_.embedding_dim;
    const int64_t width = batch * config_.interaction_width();
    reserve_poisoned(pooled_, pooled);
    reserve_poisoned(interaction_, width);
    reserve_poisoned(grad_logits_, batch);
    reserve_poisoned(grad_top_in_, width);
    reserve_poisoned(grad_concat_, cross_ ? width : 0);
    reserve_poisoned(grad_bottom_, batch * config_.embedding_dim);
    reserve_poisoned(grad_pooled_, pooled);
    capacity_ = batch;
  }

  // Returns the logits (batch.size values, valid until the next forward).
  const float* forward(const Batch& batch) {
    const int64_t b = batch.size;
    reserve(b);
    bottom_out_ = bottom_mlp_.forward(batch.dense.data(), b);
    if (group_) sharded_->forward(batch, pooled_.data());
    else embeddings_->forward(batch, pooled_.data());
    if (dot_) {
      dot_->forward(bottom_out_, pooled_.data(), b, interaction_.data());
      top_in_ = interaction_.data();
    } else {
      concatenate(b);
      top_in_ = cross_ ? cross_->forward(interaction_.data(), b) : interaction_.data();
    }
    return top_mlp_.forward(top_in_, b);
  }

  // DCNv2 input row: [bottom output (D), pooled embeddings of every table (T x D)].
  void concatenate(int64_t batch) {
    const int64_t d = config_.embedding_dim;
    const int64_t td = config_.num_tables() * d;
    const int64_t width = d + td;
    float* cat = interaction_.data();
    const float* pooled = pooled_.data();
#pragma omp parallel for schedule(static) if (batch * width > kParallelMinElements)
    for (int64_t i = 0; i < batch; ++i) {
      std::copy(bottom_out_ + i * d, bottom_out_ + (i + 1) * d, cat + i * width);
      std::copy(pooled + i * td, pooled + (i + 1) * td, cat + i * width + d);
    }
  }

  // Gradients of every dense parameter, of the bottom output and of the pooled
  // embeddings, from grad_logits_.
  void backward(const Batch& batch) {
    const int64_t b = batch.size;
    top_mlp_.backward(top_in_, grad_logits_.data(), grad_top_in_.data());
    if (dot_) {
      dot_->backward(bottom_out_, pooled_.data(), grad_top_in_.data(), b, grad_bottom_.data(), grad_pooled_.data());
    } else {
      const float* grad_cat = grad_top_in_.data();
      if (cross_) {
        cross_->backward(interaction_.data(), grad_top_in_.data(), grad_concat_.data());
        grad_cat = grad_concat_.data();
      }
      split_concatenation(grad_cat, b);
    }
    if (group_) start_gradient_buckets(kTopBuckets);  // top and cross gradients are final
    bottom_mlp_.backward(batch.dense.data(), grad_bottom_.data(), nullptr);
    if (group_) start_gradient_buckets(kBottomBuckets);
  }

  // ---- Data parallelism ----
  static constexpr int kTopBuckets = 0;     // cross net and top MLP
  static constexpr int kBottomBuckets = 1;  // bottom MLP

  // Samples [B r / N, B (r+1) / N): empty on some ranks when B < N (the last batch of
  // an epoch or of the evaluation set).
  Batch local_slice(const Batch& global) const {
    const int64_t n = group_->size(), r = group_->rank();
    const int64_t begin = global.size * r / n;
    return slice_batch(global, begin, global.size * (r + 1) / n - begin);
  }

  // A rank whose slice of the batch is empty takes part in every collective of the step
  // (serving its shards, adding zero gradients) and applies the same dense step.
  double train_step_without_samples(const Batch& global_batch, const StepRates& rates) {
    sharded_->forward(slice_batch(global_batch, 0, 0), nullptr);
    const double loss =
        dist::all_reduce_sum_value(*group_, 0.0, "all_reduce(loss)") / static_cast<double>(global_batch.size);
    int64_t& step = step_.data<int64_t>()[0];
    if (!std::isfinite(loss))
      throw NumericError("train step " + std::to_string(step) + " (batch from sample " +
                         std::to_string(global_batch.first_sample) + "): the loss is " + std::to_string(loss) +
                         "; no update was applied");
    for (DenseParam& p : params_) std::fill_n(p.grad.data<float>(), p.grad.numel(), 0.0f);
    start_gradient_buckets(kTopBuckets);
    start_gradient_buckets(kBottomBuckets);
    sharded_->backward_update(nullptr, rates.sparse_lr, step);
    finish_gradient_buckets();
    optimizer_->step(rates.dense_lr, step + 1);
    ++step;
    return loss;
  }

  struct Bucket {
    int network = kTopBuckets;
    std::vector<std::size_t> params;  // indices into params_
    std::vector<float> flat;
    std::unique_ptr<dist::PendingCollective> pending;
  };

  void make_buckets() {
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const int network = params_[i].name.rfind("bottom_mlp.", 0) == 0 ? kBottomBuckets : kTopBuckets;
      const int64_t bytes = params_[i].grad.numel() * static_cast<int64_t>(sizeof(float));
      if (buckets_.empty() || buckets_.back().network != network ||
          static_cast<int64_t>(buckets_.back().flat.size() * sizeof(float)) + bytes > kGradientBucketBytes)
        buckets_.push_back(Bucket{network, {}, {}, nullptr});
      buckets_.back().params.push_back(i);
      buckets_.back().flat.resize(buckets_.back().flat.size() + static_cast<std::size_t>(params_[i].grad.numel()));
    }
  }

  void start_gradient_buckets(int network) {
    for (std::size_t k = 0; k < buckets_.size(); ++k) {
      Bucket& bucket = buckets_[k];
      if (bucket.network != network) continue;
      float* at = bucket.flat.data();
      for (std::size_t i : bucket.params) {
        const Tensor& g = params_[i].grad;
        at = std::copy_n(g.data<float>(), g.numel(), at);
      }
      bucket.pending = group_->all_reduce_sum_start(std::span<float>(bucket.flat),
                                                    "all_reduce(dense gradients, bucket " + std::to_string(k) + ")");
    }
  }

  void finish_gradient_buckets() {
    for (Bucket& bucket : buckets_) {
      bucket.pending->wait();
      bucket.pending.reset();
      const float* at = bucket.flat.data();
      for (std::size_t i : bucket.params) {
        Tensor& g = params_[i].grad;
        std::copy_n(at, g.numel(), g.data<float>());
        at += g.numel();
      }
    }
  }

  void split_concatenation(const float* grad_cat, int64_t batch) {
    const int64_t d = config_.embedding_dim;
    const int64_t td = config_.num_tables() * d;
    const int64_t width = d + td;
    float* gb = grad_bottom_.data();
    float* gp = grad_pooled_.data();
#pragma omp parallel for schedule(static) if (batch * width > kParallelMinElements)
    for (int64_t i = 0; i < batch; ++i) {
      std::copy(grad_cat + i * width, grad_cat + i * width + d, gb + i * d);
      std::copy(grad_cat + i * width + d, grad_cat + (i + 1) * width, gp + i * td);
    }
  }

  ModelConfig config_;
  Mlp<float> bottom_mlp_;
  Mlp<float> top_mlp_;
  std::optional<DotInteraction<float>> dot_;  // DLRM
  std::optional<CrossNet<float>> cross_;      // DCNv2 with cross_layers > 0
  std::optional<EmbeddingCollection> embeddings_;        // single process
  dist::ProcessGroup* group_ = nullptr;                 // data parallel: the job's ranks
  std::unique_ptr<ShardedEmbeddingCollection> sharded_;  // data parallel: this rank's shards
  std::vector<Bucket> buckets_;                          // data parallel: dense gradients
  std::vector<DenseParam> params_;  // bottom, cross, top: the optimizer's order
  std::unique_ptr<DenseOptimizer> optimizer_;
  Tensor step_;  // i64 [1]: updates applied so far (read on every step: restorable)

  // Workspace, sized for the largest batch seen.
  int64_t capacity_ = 0;
  std::vector<float> pooled_;        // B x T x D
  std::vector<float> interaction_;   // B x interaction_width: dot output or concatenation
  std::vector<float> grad_logits_;   // B
  std::vector<float> grad_top_in_;   // B x interaction_width
  std::vector<float> grad_concat_;   // DCNv2 with a cross net: B x interaction_width
  std::vector<float> grad_bottom_;   // B x D
  std::vector<float> grad_pooled_;   // B x T x D
  const float* bottom_out_ = nullptr;  // bottom MLP output of the last forward
  const float* top_in_ = nullptr;      // top MLP input of the last forward
};

}  // namespace

void validate_cpu_model_config(const ModelConfig& m, const OptimConfig& optim) {
  if (m.num_dense <= 0)
    throw ConfigError("model.num_dense = " + std::to_string(m.num_dense) + ": expected a positive count");
  if (m.embedding_dim <= 0)
    throw ConfigError("model.embedding_dim = " + std::to_string(m.embedding_dim) + ": expected a positive size");
  if (m.tables.empty()) throw ConfigError("model.tables: expected at least one table, got none");
  for (std::size_t t = 0; t < m.tables.size(); ++t)
    if (m.tables[t].rows <= 0)
      throw ConfigError("model.tables[" + std::to_string(t) + "].rows (table \"" + m.tables[t].name +
                        "\") = " + std::to_string(m.tables[t].rows) + ": expected a positive row count");
  check_widths(m.bottom_mlp, "model.bottom_mlp");
  if (m.bottom_mlp.back() != m.embedding_dim)
    throw ConfigError("model.bottom_mlp: the last width must equal model.embedding_dim = " +
                      std::to_string(m.embedding_dim) + ", got " + std::to_string(m.bottom_mlp.back()));
  check_widths(m.top_mlp, "model.top_mlp");
  if (m.top_mlp.back() != 1)
    throw ConfigError("model.top_mlp: the last width must be 1 (the logit), got " + std::to_string(m.top_mlp.back()));
  if (m.arch == Arch::dcnv2) {
    if (m.cross_layers < 0)
      throw ConfigError("model.cross_layers = " + std::to_string(m.cross_layers) + ": expected a count >= 0");
    if (m.cross_rank < 0)
      throw ConfigError("model.cross_rank = " + std::to_string(m.cross_rank) +
                        ": expected 0 (full rank) or a positive rank");
  }
  if (m.dense_dtype != DType::f32)
    throw ConfigError("model.dense_dtype = \"" + std::string(dtype_name(m.dense_dtype)) +
                      "\": the CPU backend computes the dense layers in fp32 only");
  if (optim.dense != OptimizerKind::sgd && optim.dense != OptimizerKind::adagrad && optim.dense != OptimizerKind::adam)
    throw ConfigError("optim.dense: expected sgd, adagrad or adam (row-wise Adagrad is for embeddings only)");
}

std::unique_ptr<Model> make_cpu_model(const ModelConfig& model, const OptimConfig& optim) {
  validate_cpu_model_config(model, optim);
  return std::make_unique<CpuDlrm>(model, optim);
}

std::unique_ptr<DistributedModel> make_distributed_cpu_model(const ModelConfig& model, const OptimConfig& optim,
                                                             const dist::ShardingPlan& plan,
                                                             dist::ProcessGroup& group) {
  validate_cpu_model_config(model, optim);
  return std::make_unique<CpuDlrm>(model, optim, &plan, &group);
}

}  // namespace hetrec::model::model
