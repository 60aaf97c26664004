// The GPU engine's step: the batch onto the device, forward, loss, backward, the sparse
// and dense updates, as one stream of device work (captured and replayed by StepGraph),
// and prediction.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/batch_checks.h"
#include "data/batch_slice.h"
#include "gpu/memory.h"
#include "kernels/bce_loss.h"
#include "kernels/column_sum.h"
#include "model/gpu/gpu_dlrm_engine.h"

namespace hetrec::inline model::gpu_model {

double GpuDlrm::train_step(const Batch& batch, const StepRates& rates) {
  batches_.begin(/*training=*/true);
  check_batch_shape(batch, config_.num_dense, config_.num_tables(), /*need_labels=*/true);
  host_->take_back();
  const auto upload_start = std::chrono::steady_clock::now();
  // Staged during the previous step, or now. Data parallel: `batch` is the global batch;
  // this rank computes its share.
  const int64_t b = batches_.take(batch, /*training=*/true);
  copy_batch_to_device();
  if (phases_.enabled()) {
    batch_ready_.synchronize();
    phases_.set_upload_ms(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - upload_start).count());
  }

  int64_t& step = step_.data<int64_t>()[0];
  *scalars_host_.as<kernels::StepScalars>() =
      kernels::make_step_scalars(rates.sparse_lr, rates.dense_lr, optim_.beta1, optim_.beta2, step);
  const gpu::stream_t s = compute_.get();
  compute_.wait(batch_ready_);

  // A graph serves one global batch size (the exchanges' sizes depend on every rank's share).
  graph_.run(s, batch.size, options_.cuda_graph && !options_.profile_phases, [&] { enqueue_step(b); });
  batches_.stage_next(copy_);  // the next batch, while the device runs this step
  embeddings_->wait(compute_, "train step " + std::to_string(step_.data<int64_t>()[0]));

  const StepOutput out = *output_host_.as<StepOutput>();
  if (out.skipped) {
    embeddings_->validate(batch);  // throws DataError naming the table, sample and id
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

void GpuDlrm::predict(const Batch& batch, std::span<float> logits) {
  check_batch_shape(batch, config_.num_dense, config_.num_tables(), /*need_labels=*/false);
  if (static_cast<int64_t>(logits.size()) != batch.size)
    throw InternalError("predict: " + std::to_string(logits.size()) + " logits for a batch of " +
                        std::to_string(batch.size));
  if (batch.size < embeddings_->min_predict_batch()) {
    // Fewer samples than ranks (the end of an evaluation set): every rank needs one, so
    // the last sample is repeated and its extra logits dropped.
    check_bag_offsets(batch, config_.num_tables());
    std::vector<int64_t> samples(static_cast<std::size_t>(embeddings_->min_predict_batch()));
    for (std::size_t i = 0; i < samples.size(); ++i) samples[i] = std::min<int64_t>(static_cast<int64_t>(i), batch.size - 1);
    std::vector<float> all(samples.size());
    predict(select_samples(batch, samples), all);
    std::copy(all.begin(), all.begin() + batch.size, logits.begin());
    return;
  }
  host_->take_back();
  batches_.begin(/*training=*/false);
  const int64_t b = batches_.take(batch, /*training=*/false);
  copy_batch_to_device();
  compute_.wait(batch_ready_);
  const gpu::stream_t s = compute_.get();
  gpu::memset_async(scalars_.raw(), 0, sizeof(kernels::StepScalars), s);
  // Data parallel, every rank receives every sample's logit, and skips (throws) together.
  const float* out = embeddings_->gather_logits(forward(b), b, batch.size, device_scalars(), s);
  gpu::memcpy_async(logits.data(), out, logits.size() * sizeof(float), gpu::CopyKind::device_to_host, s);
  copy_skip_flag(s);
  embeddings_->wait(compute_, "predict (batch from sample " + std::to_string(batch.first_sample) + ")");
  if (output_host_.as<StepOutput>()->skipped) {
    embeddings_->validate(batch);
    throw DataError("predict (batch from sample " + std::to_string(batch.first_sample) +
                    "): ids outside their tables reached the device");
  }
}

void GpuDlrm::copy_batch_to_device() {
  bool moved = batches_.copy_to_device(copy_, batch_ready_, compute_.get());
  moved |= reserve(batches_.samples());
  moved |= embeddings_->reserve(batches_.max_ids());
  if (moved) graph_.invalidate();
}

// Activation, gradient and scratch buffers for `batch` samples. Returns true when any
// buffer was (re)allocated.
bool GpuDlrm::reserve(int64_t batch) {
  if (batch <= capacity_) return false;
  const int64_t dim = config_.embedding_dim;
  const int64_t fd = (config_.num_tables() + 1) * dim;
  const int64_t width = config_.interaction_width();
  gemm_choice_.choose_small_gemms(batch, options_.model_small_gemms, *bottom_, *top_);
  bottom_->reserve(batch, alloc_);
  top_->reserve(batch, alloc_);
  if (cross_) cross_->reserve(batch, alloc_);
  features_ = Tensor::empty({batch, fd}, DType::f32, alloc_);
  grad_features_ = Tensor::empty({batch, fd}, DType::f32, alloc_);
  if (config_.arch == Arch::dlrm) interaction_ = Tensor::empty({batch, width}, DType::f32, alloc_);
  grad_logits_ = Tensor::empty({batch}, DType::f32, alloc_);
  grad_top_in_ = Tensor::empty({batch, width}, DType::f32, alloc_);
  const int64_t widest = std::max<int64_t>({fd, width, bottom_->max_width(), top_->max_width()});
  scratch_ = Tensor::empty({static_cast<int64_t>(kernels::column_sum_workspace_bytes(batch, widest)) + 1}, DType::u8,
                           alloc_);
  bce_workspace_ = Tensor::empty({static_cast<int64_t>(kernels::bce_loss_workspace_bytes(batch))}, DType::u8, alloc_);
  capacity_ = batch;
  return true;
}

kernels::LossScaleState* GpuDlrm::device_loss_scale() const {
  return loss_scale_.defined() ? reinterpret_cast<kernels::LossScaleState*>(loss_scale_.raw()) : nullptr;
}

EmbeddingStepArgs GpuDlrm::embedding_args() {
  const int64_t dim = config_.embedding_dim;
  EmbeddingStepArgs a;
  a.compute = &compute_;
  a.phases = &phases_;
  a.batch = &batches_.device();
  a.scalars = device_scalars();
  a.loss_scale = device_loss_scale();
  a.loss = &device_output()->loss;
  a.slots = features_.data<float>() + dim;
  a.stride = (config_.num_tables() + 1) * dim;
  return a;
}

// Bottom MLP, embeddings, interaction, top MLP. Returns the logits (batch x 1).
const float* GpuDlrm::forward(int64_t batch) {
  const gpu::stream_t s = compute_.get();
  const DeviceBatch& db = batches_.device();
  const int64_t fd = (config_.num_tables() + 1) * config_.embedding_dim;
  const int64_t width = config_.interaction_width();
  float* x = features_.data<float>();
  // Row b of X: [bottom output, pooled table 0, ..., pooled table T-1]; both producers
  // write into it directly.
  embeddings_->forward(embedding_args(), [&] { bottom_->forward(gemm_, db.dense, config_.num_dense, batch, x, fd, s); });
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
void GpuDlrm::enqueue_step(int64_t batch) {
  const gpu::stream_t s = compute_.get();
  const DeviceBatch& db = batches_.device();
  const int64_t dim = config_.embedding_dim;
  const int64_t fd = (config_.num_tables() + 1) * dim;
  const int64_t width = config_.interaction_width();
  kernels::StepScalars* scalars = device_scalars();
  gpu::memcpy_async(scalars, scalars_host_.get(), sizeof(kernels::StepScalars), gpu::CopyKind::host_to_device, s);
  gpu::memset_async(output_.raw(), 0, sizeof(StepOutput), s);
  kernels::LossScaleState* loss_scale = device_loss_scale();
  if (loss_scale) gpu::memset_async(&loss_scale->overflow, 0, sizeof(int32_t), s);
  if (phases_.enabled()) gemm_.begin_timing();  // eager: profiled steps are never captured
  mark(kStart);
  EmbeddingStepArgs embedding = embedding_args();
  embeddings_->begin_step(embedding);

  const float* logits = forward(batch);
  // Data parallel, the loss is the global batch's mean.
  kernels::bce_with_logits(logits, 1, db.labels, batch, grad_logits_.data<float>(), 1, &device_output()->loss,
                           &scalars->skip_update, bce_workspace_.raw(), bce_workspace_.nbytes(), s,
                           loss_scale ? &loss_scale->scale : nullptr,
                           embeddings_->data_parallel() ? batches_.global_samples() : 0);
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
  embedding.grad_slots = grad_x + dim;
  mark(kInteractionBackward);
  embeddings_->after_interaction_backward(embedding);
  bottom_->backward(gemm_, db.dense, config_.num_dense, grad_x, fd, nullptr, 0, batch, scratch, s);
  if (loss_scale) {
    // Every gradient an update reads, back to its true size; an overflow anywhere
    // raises the skip flag before the first update runs.
    kernels::unscale_and_check(dense_->flat_grads(), 1, dense_->flat_elements(), dense_->flat_elements(), loss_scale,
                               &scalars->skip_update, s);
    kernels::unscale_and_check(grad_x + dim, batch, fd - dim, fd, loss_scale, &scalars->skip_update, s);
  }
  mark(kBottomBackward);
  embeddings_->after_dense_backward(embedding, dense_->flat_grads(), dense_->flat_elements());
  mark(kEmbeddingBackward);
  dense_->step(scalars, s);
  if (loss_scale) {
    kernels::update_loss_scale(loss_scale, loss_scale_rule_, s);
    gpu::memcpy_async(&output_host_.as<StepOutput>()->overflow, &loss_scale->overflow, sizeof(int32_t),
                      gpu::CopyKind::device_to_host, s);
  }
  embeddings_->join(embedding);
  mark(kDenseOptimizer);
  gpu::memcpy_async(&output_host_.as<StepOutput>()->loss, &device_output()->loss, sizeof(double),
                    gpu::CopyKind::device_to_host, s);
  copy_skip_flag(s);
  gemm_.stop_timing();
}

void GpuDlrm::copy_skip_flag(gpu::stream_t s) {
  gpu::memcpy_async(&output_host_.as<StepOutput>()->skipped, &device_scalars()->skip_update, sizeof(int32_t),
                    gpu::CopyKind::device_to_host, s);
}

}  // namespace hetrec::model::gpu_model
