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
#include "kernels/embedding_bag_backward.h"
#include "kernels/embedding_bag_forward.h"
#include "model/gpu/gpu_dlrm_engine.h"

namespace hetrec::gpu_model {

double GpuDlrm::train_step(const Batch& batch, const StepRates& rates) {
  batches_.begin(/*training=*/true);
  check_batch(batch, /*need_labels=*/true);
  take_back_state();
  const auto upload_start = std::chrono::steady_clock::now();
  // Staged during the previous step, or now. Data parallel: `batch` is the global batch;
  // this rank computes its share.
  const int64_t b = batches_.take(batch, /*training=*/true);
  copy_batch_to_device();
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
  graph_.run(s, batch.size, options_.cuda_graph && !options_.profile_phases, [&] { enqueue_step(b); });
  batches_.stage_next(copy_);  // the next batch, while the device runs this step
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

void GpuDlrm::predict(const Batch& batch, std::span<float> logits) {
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
  batches_.begin(/*training=*/false);
  const int64_t b = batches_.take(batch, /*training=*/false);
  copy_batch_to_device();
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

void GpuDlrm::copy_batch_to_device() {
  bool moved = batches_.copy_to_device(copy_, batch_ready_, compute_.get());
  moved |= reserve(batches_.samples(), sharded_ ? 0 : batches_.max_ids());
  if (moved) graph_.invalidate();
}

// Waits for the step's device work; data parallel, bounded by the collective timeout
// (a rank that died or hangs ends the step with a DeviceError naming `op`).
void GpuDlrm::finish(const std::string& op) {
  if (sharded_)
    data_parallel_.devices->communicator().wait(compute_.get(), op, data_parallel_.devices->timeout_s());
  else
    compute_.synchronize();
}

void GpuDlrm::validate_ids(const Batch& batch) const {
  if (sharded_) sharded_->validate(batch);
  else embeddings_->validate(batch);
}

// Activation, gradient and scratch buffers for `batch` samples and `max_ids` ids.
// Returns true when any buffer was (re)allocated.
bool GpuDlrm::reserve(int64_t batch, int64_t max_ids) {
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
void GpuDlrm::mark(Phase phase) {
  if (options_.profile_phases) phase_events_[static_cast<std::size_t>(phase)].record(compute_.get());
}

kernels::LossScaleState* GpuDlrm::device_loss_scale() const {
  return loss_scale_.defined() ? reinterpret_cast<kernels::LossScaleState*>(loss_scale_.raw()) : nullptr;
}

// Bottom MLP, embeddings, interaction, top MLP. Returns the logits (batch x 1).
const float* GpuDlrm::forward(int64_t batch) {
  const gpu::stream_t s = compute_.get();
  const DeviceBatch& db = batches_.device();
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
  mark(kStart);
  if (early_sort()) {
    fork_.record(s);
    embedding_stream_.wait(fork_);
    sort_plan_ = kernels::embedding_backward_sort(embeddings_->tables(), db.bags, embeddings_->optimizer(scalars),
                                                  embedding_workspace_.raw(), embedding_workspace_.nbytes(),
                                                  embedding_stream_.get());
    sorted_.record(embedding_stream_.get());
  }

  const float* logits = forward(batch);
  kernels::bce_with_logits(logits, 1, db.labels, batch, grad_logits_.data<float>(), 1, &device_output()->loss,
                           &scalars->skip_update, bce_workspace_.raw(), bce_workspace_.nbytes(), s,
                           loss_scale ? &loss_scale->scale : nullptr, sharded_ ? batches_.global_samples() : 0);
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
  if (concurrent_embedding_backward()) {
    const gpu::stream_t e = embedding_stream_.get();
    fork_.record(s);
    embedding_stream_.wait(fork_);  // after the sort, already on this stream
    update_embeddings_after_sort(grad_x + dim, fd, scalars, e);
    update_done_.record(e);
  }
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
    if (concurrent_embedding_backward()) {
      // Started beside the bottom MLP's backward.
    } else if (early_sort()) {
      compute_.wait(sorted_);
      update_embeddings_after_sort(grad_x + dim, fd, scalars, s);
    } else {
      kernels::embedding_bag_backward_update(embeddings_->tables(), db.bags, grad_x + dim, fd,
                                             embeddings_->optimizer(scalars), embedding_workspace_.raw(),
                                             embedding_workspace_.nbytes(), s, tuned_.sparse_update.get());
    }
  }
  mark(kEmbeddingBackward);
  dense_->step(scalars, s);
  if (loss_scale) {
    kernels::update_loss_scale(loss_scale, loss_scale_rule_, s);
    gpu::memcpy_async(&output_host_.as<StepOutput>()->overflow, &loss_scale->overflow, sizeof(int32_t),
                      gpu::CopyKind::device_to_host, s);
  }
  if (overlapped() || concurrent_embedding_backward()) compute_.wait(update_done_);
  mark(kDenseOptimizer);
  gpu::memcpy_async(&output_host_.as<StepOutput>()->loss, &device_output()->loss, sizeof(double),
                    gpu::CopyKind::device_to_host, s);
  copy_skip_flag(s);
}

void GpuDlrm::start_embedding_backward(gpu::Communicator& comm, const float* grad_slots, int64_t stride,
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

void GpuDlrm::update_embeddings_after_sort(const float* grad_slots, int64_t stride, kernels::StepScalars* scalars,
                                           gpu::stream_t stream) {
  const kernels::PooledGradView grad{grad_slots, stride, DType::f32};
  const kernels::SparseOptimizerParams opt = embeddings_->optimizer(scalars);
  const DeviceBatch& db = batches_.device();
  kernels::embedding_backward_chunk_sums(embeddings_->tables(), db.bags, grad, opt, sort_plan_,
                                         embedding_workspace_.raw(), stream);
  kernels::embedding_backward_apply(embeddings_->tables(), db.bags, grad, opt, sort_plan_, stream,
                                    tuned_.sparse_update.get());
}

void GpuDlrm::copy_skip_flag(gpu::stream_t s) {
  gpu::memcpy_async(&output_host_.as<StepOutput>()->skipped, &device_scalars()->skip_update, sizeof(int32_t),
                    gpu::CopyKind::device_to_host, s);
}

}  // namespace hetrec::gpu_model
