#pragma once
// The embedding side of a data-parallel step (model/gpu/embedding_stage.h): this rank's
// shards of the tables (model/gpu/sharded_embeddings.h), looked up for the global batch,
// and everything the ranks exchange over NCCL: the pooled vectors to their samples' ranks,
// their gradients back to the shards, the dense gradients summed, and the agreement on the
// skip (and fp16 overflow) flags and the loss, so that every rank skips or applies the same
// update and the replicas stay identical.
//
// With `overlap` (options.overlap_exchanges, not profiling) the lookups and their exchange
// run on a stream of the stage's own beside the bottom MLP, and the gradient exchange, the
// flags and the update beside the bottom MLP's backward (after it, with loss scaling, whose
// overflow check comes first); the dense all-reduce follows the flags' collectives (one
// order of collectives on the communicator) and runs beside the update.
#include <memory>
#include <string>
#include <vector>

#include "dist/nccl_process_group.h"
#include "dist/process_group.h"
#include "dist/sharding.h"
#include "gpu/event.h"
#include "model/gpu/embedding_stage.h"
#include "model/gpu/sharded_embeddings.h"

namespace hetrec::inline model::gpu_model {

// Data parallelism over GPUs: the job's ranks on the host (checkpoints, control) and on
// the devices (NCCL, every exchange of the step), and where the tables live.
struct DataParallel {
  dist::ProcessGroup* host = nullptr;
  dist::NcclProcessGroup* devices = nullptr;
  dist::ShardingPlan plan;
};

class ShardedEmbeddingStage final : public EmbeddingStage {
 public:
  ShardedEmbeddingStage(const ModelConfig& model, const OptimConfig& optim, const DataParallel& data_parallel,
                        Allocator& device, gpu::stream_t stream, bool overlap);
  ~ShardedEmbeddingStage() override;

  // The shards, which stage their own bags (DeviceBatchStream::attach_shards).
  ShardedGpuEmbeddings& shards() { return *shards_; }
  int ranks() const { return data_parallel_.devices->size(); }

  void begin_step(const EmbeddingStepArgs&) override {}
  void forward(const EmbeddingStepArgs& a, const std::function<void()>& bottom_forward) override;
  void after_interaction_backward(const EmbeddingStepArgs& a) override;
  void after_dense_backward(const EmbeddingStepArgs& a, float* dense_grads, int64_t dense_elements) override;
  void join(const EmbeddingStepArgs& a) override;

  int64_t min_predict_batch() const override { return ranks(); }
  const float* gather_logits(const float* local, int64_t local_count, int64_t batch, kernels::StepScalars* scalars,
                             gpu::stream_t stream) override;

  void synchronize() override { stream_.synchronize(); }
  void wait(gpu::Stream& compute, const std::string& op) override;
  bool reserve(int64_t) override { return false; }  // the shards size their own
  void validate(const Batch& batch) const override { shards_->validate(batch); }
  const std::vector<DeviceMirror>& mirrors() override { return shards_->mirrors(); }
  std::vector<ShardTensor> shard_tensors() override { return shards_->shard_tensors(); }
  bool data_parallel() const override { return true; }
  int64_t host_bytes() const override { return shards_->host_bytes(); }
  std::string describe(const ModelConfig& model) const override;
  void use_tuned(const kernels::TunedEmbeddingForward* forward, const kernels::TunedSparseUpdate* update) override {
    tuned_forward_ = forward;
    tuned_update_ = update;
  }

 private:
  // On the stage's stream, once the compute stream has the slots' gradients: the gradient
  // exchange, the agreement on the flags and the loss, then the update. flags_agreed_
  // marks the end of its collectives, update_done_ its end.
  void start_backward(const EmbeddingStepArgs& a);

  DataParallel data_parallel_;
  bool overlap_;
  Allocator& device_;
  std::unique_ptr<ShardedGpuEmbeddings> shards_;
  // overlap: lookups, exchanges and the embedding update (at normal priority: the
  // device's greatest measured no different, bench/results/multigpu-20261201b-h200x2.json).
  gpu::Stream stream_;
  gpu::Event fork_{false}, embeddings_ready_{false}, flags_agreed_{false}, update_done_{false};
  Tensor all_logits_;  // predict: every sample's logit
  const kernels::TunedEmbeddingForward* tuned_forward_ = nullptr;
  const kernels::TunedSparseUpdate* tuned_update_ = nullptr;
};

}  // namespace hetrec::model::gpu_model
