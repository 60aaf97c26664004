#include "model/gpu/local_embedding_stage.h"

#include "core/error.h"
#include "tunable/embedding_forward/embedding_bag_forward.h"

namespace hetrec::inline model::gpu_model {

LocalEmbeddingStage::LocalEmbeddingStage(const ModelConfig& model, const OptimConfig& optim, Allocator& device,
                                         gpu::stream_t stream, Options options)
    : options_(options),
      dim_(model.embedding_dim),
      device_(device),
      tables_(std::make_unique<GpuEmbeddings>(model, optim, device, stream)) {
  if (options_.concurrent_update && !options_.early_sort)
    throw InternalError("LocalEmbeddingStage: the concurrent update follows the early sort");
}

LocalEmbeddingStage::~LocalEmbeddingStage() {
  try {
    stream_.synchronize();
  } catch (const Error&) {
    // A device error is already being reported elsewhere; the destructor must not throw.
  }
}

void LocalEmbeddingStage::begin_step(const EmbeddingStepArgs& a) {
  if (!options_.early_sort) return;
  fork_.record(a.compute->get());
  stream_.wait(fork_);
  sort_plan_ = kernels::embedding_backward_sort(tables_->tables(), a.batch->bags, tables_->optimizer(a.scalars),
                                                workspace_.raw(), workspace_.nbytes(), stream_.get());
  sorted_.record(stream_.get());
}

void LocalEmbeddingStage::forward(const EmbeddingStepArgs& a, const std::function<void()>& bottom_forward) {
  const gpu::stream_t s = a.compute->get();
  bottom_forward();
  a.phases->mark(kBottomForward, s);
  kernels::PooledView pooled;
  pooled.data = a.slots;
  pooled.row_stride = a.stride;
  pooled.dtype = DType::f32;
  kernels::embedding_bag_forward(tables_->tables(), a.batch->bags, pooled, &a.scalars->skip_update, s, tuned_forward_);
  a.phases->mark(kEmbeddingForward, s);
  a.phases->mark(kEmbeddingExchange, s);
}

void LocalEmbeddingStage::after_interaction_backward(const EmbeddingStepArgs& a) {
  if (!options_.concurrent_update) return;
  fork_.record(a.compute->get());
  stream_.wait(fork_);  // after the sort, already on this stream
  update_after_sort(a, stream_.get());
  update_done_.record(stream_.get());
}

void LocalEmbeddingStage::after_dense_backward(const EmbeddingStepArgs& a, float*, int64_t) {
  const gpu::stream_t s = a.compute->get();
  a.phases->mark(kDenseAllReduce, s);
  a.phases->mark(kGradientExchange, s);
  if (options_.concurrent_update) return;  // started beside the bottom MLP's backward
  if (options_.early_sort) {
    a.compute->wait(sorted_);
    update_after_sort(a, s);
    return;
  }
  kernels::embedding_bag_backward_update(tables_->tables(), a.batch->bags, a.grad_slots, a.stride,
                                         tables_->optimizer(a.scalars), workspace_.raw(), workspace_.nbytes(), s,
                                         tuned_update_);
}

void LocalEmbeddingStage::join(const EmbeddingStepArgs& a) {
  if (options_.concurrent_update) a.compute->wait(update_done_);
}

void LocalEmbeddingStage::update_after_sort(const EmbeddingStepArgs& a, gpu::stream_t stream) {
  const kernels::PooledGradView grad{a.grad_slots, a.stride, DType::f32};
  const kernels::SparseOptimizerParams opt = tables_->optimizer(a.scalars);
  kernels::embedding_backward_chunk_sums(tables_->tables(), a.batch->bags, grad, opt, sort_plan_, workspace_.raw(),
                                         stream);
  kernels::embedding_backward_apply(tables_->tables(), a.batch->bags, grad, opt, sort_plan_, stream, tuned_update_);
}

void LocalEmbeddingStage::wait(gpu::Stream& compute, const std::string&) { compute.synchronize(); }

bool LocalEmbeddingStage::reserve(int64_t max_ids) {
  if (max_ids <= id_capacity_) return false;
  workspace_ = Tensor::empty({static_cast<int64_t>(kernels::embedding_backward_workspace_bytes(max_ids, dim_))},
                             DType::u8, device_);
  id_capacity_ = max_ids;
  return true;
}

std::vector<ShardTensor> LocalEmbeddingStage::shard_tensors() {
  throw InternalError("LocalEmbeddingStage::shard_tensors: one device holds whole tables, not shards");
}

std::string LocalEmbeddingStage::describe(const ModelConfig& m) const {
  const int host = tables_->host_table_count();
  if (host == 0) return "; every table in device memory";
  std::string names;
  for (int t = 0; t < m.num_tables(); ++t)
    if (tables_->on_host(t)) names += (names.empty() ? "" : ", ") + m.tables[static_cast<std::size_t>(t)].name;
  return "; " + std::to_string(host) + " of " + std::to_string(m.num_tables()) + " tables in mapped host memory (" +
         names + ", " + std::to_string(tables_->host_bytes() / (1024 * 1024)) + " MiB with their optimizer state)";
}

}  // namespace hetrec::model::gpu_model
