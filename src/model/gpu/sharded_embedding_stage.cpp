#include "model/gpu/sharded_embedding_stage.h"

#include "core/error.h"
#include "data/batch_slice.h"

namespace hetrec::inline model::gpu_model {

ShardedEmbeddingStage::ShardedEmbeddingStage(const ModelConfig& model, const OptimConfig& optim,
                                             const DataParallel& data_parallel, Allocator& device,
                                             gpu::stream_t stream, bool overlap)
    : data_parallel_(data_parallel),
      overlap_(overlap),
      device_(device),
      shards_(std::make_unique<ShardedGpuEmbeddings>(model, optim, data_parallel.plan, data_parallel.devices->rank(),
                                                     data_parallel.devices->communicator(), device, stream)) {}

ShardedEmbeddingStage::~ShardedEmbeddingStage() {
  try {
    stream_.synchronize();
  } catch (const Error&) {
    // A device error is already being reported elsewhere; the destructor must not throw.
  }
}

void ShardedEmbeddingStage::forward(const EmbeddingStepArgs& a, const std::function<void()>& bottom_forward) {
  const gpu::stream_t s = a.compute->get();
  if (overlap_) {
    // The lookups and their exchange on the stage's stream, beside the bottom MLP: they
    // write X's table slots, the bottom MLP its slot 0.
    const gpu::stream_t e = stream_.get();
    fork_.record(s);
    stream_.wait(fork_);
    shards_->lookup(&a.scalars->skip_update, e, tuned_forward_);
    shards_->exchange_pooled(a.slots, a.stride, e);
    embeddings_ready_.record(e);
    bottom_forward();
    a.compute->wait(embeddings_ready_);
    a.phases->mark(kBottomForward, s);
    a.phases->mark(kEmbeddingForward, s);
    a.phases->mark(kEmbeddingExchange, s);
    return;
  }
  bottom_forward();
  a.phases->mark(kBottomForward, s);
  shards_->lookup(&a.scalars->skip_update, s, tuned_forward_);
  a.phases->mark(kEmbeddingForward, s);
  shards_->exchange_pooled(a.slots, a.stride, s);
  a.phases->mark(kEmbeddingExchange, s);
}

// Without loss scaling the skip flag is settled by the loss, so the embedding backward
// starts beside the bottom MLP's; with it, only after every gradient is checked.
void ShardedEmbeddingStage::after_interaction_backward(const EmbeddingStepArgs& a) {
  if (overlap_ && !a.loss_scale) start_backward(a);
}

void ShardedEmbeddingStage::after_dense_backward(const EmbeddingStepArgs& a, float* dense_grads,
                                                 int64_t dense_elements) {
  const gpu::stream_t s = a.compute->get();
  gpu::Communicator& comm = data_parallel_.devices->communicator();
  const auto n = static_cast<std::size_t>(dense_elements);
  if (overlap_) {
    if (a.loss_scale) start_backward(a);
    // The dense all-reduce follows the stage's collectives (one order of collectives on
    // the communicator), then runs beside the embedding update.
    a.compute->wait(flags_agreed_);
    comm.all_reduce_sum(dense_grads, n, gpu::ReduceType::f32, s);
    return;
  }
  // The dense gradients of the global-batch mean loss, summed over ranks.
  comm.all_reduce_sum(dense_grads, n, gpu::ReduceType::f32, s);
  a.phases->mark(kDenseAllReduce, s);
  shards_->exchange_gradients(a.grad_slots, a.stride, s);
  // Every rank skips the update when any rank found a bad id, a non-finite loss or an
  // fp16 overflow, so the replicas stay identical; the loss is the global mean.
  comm.all_reduce_sum(&a.scalars->skip_update, 1, gpu::ReduceType::i32, s);
  if (a.loss_scale) comm.all_reduce_sum(&a.loss_scale->overflow, 1, gpu::ReduceType::i32, s);
  comm.all_reduce_sum(a.loss, 1, gpu::ReduceType::f64, s);
  a.phases->mark(kGradientExchange, s);
  shards_->update(a.scalars, s, tuned_update_);
}

void ShardedEmbeddingStage::join(const EmbeddingStepArgs& a) {
  if (overlap_) a.compute->wait(update_done_);
}

void ShardedEmbeddingStage::start_backward(const EmbeddingStepArgs& a) {
  const gpu::stream_t e = stream_.get();
  gpu::Communicator& comm = data_parallel_.devices->communicator();
  fork_.record(a.compute->get());
  stream_.wait(fork_);
  shards_->exchange_gradients(a.grad_slots, a.stride, e);
  comm.all_reduce_sum(&a.scalars->skip_update, 1, gpu::ReduceType::i32, e);
  if (a.loss_scale) comm.all_reduce_sum(&a.loss_scale->overflow, 1, gpu::ReduceType::i32, e);
  comm.all_reduce_sum(a.loss, 1, gpu::ReduceType::f64, e);
  flags_agreed_.record(e);
  shards_->update(a.scalars, e, tuned_update_);
  update_done_.record(e);
}

// Every rank receives every sample's logit, and skips (throws) together.
const float* ShardedEmbeddingStage::gather_logits(const float* local, int64_t local_count, int64_t batch,
                                                  kernels::StepScalars* scalars, gpu::stream_t stream) {
  if (all_logits_.numel() < batch) all_logits_ = Tensor::empty({batch}, DType::f32, device_);
  const int n = ranks();
  std::vector<int64_t> bytes(static_cast<std::size_t>(n));
  for (int h = 0; h < n; ++h)
    bytes[static_cast<std::size_t>(h)] = (share_begin(batch, h + 1, n) - share_begin(batch, h, n)) * int64_t{sizeof(float)};
  gpu::Communicator& comm = data_parallel_.devices->communicator();
  comm.all_gather_v(local, local_count * int64_t{sizeof(float)}, all_logits_.raw(), bytes, stream);
  comm.all_reduce_sum(&scalars->skip_update, 1, gpu::ReduceType::i32, stream);
  return all_logits_.data<float>();
}

void ShardedEmbeddingStage::wait(gpu::Stream& compute, const std::string& op) {
  data_parallel_.devices->communicator().wait(compute.get(), op, data_parallel_.devices->timeout_s());
}

std::string ShardedEmbeddingStage::describe(const ModelConfig&) const {
  std::string s = "; data parallel over " + std::to_string(ranks()) + " GPUs (" + data_parallel_.devices->describe() +
                  "), tables " + shards_->describe();
  const int host = shards_->host_table_count();
  if (host > 0)
    s += "; " + std::to_string(host) + " shards on this rank in mapped host memory (" +
         std::to_string(shards_->host_bytes() / (1024 * 1024)) + " MiB with their optimizer state)";
  return s;
}

}  // namespace hetrec::model::gpu_model
