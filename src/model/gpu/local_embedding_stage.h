#pragma once
// The embedding side of a one-device step (model/gpu/embedding_stage.h): every table on the
// step's device (GpuEmbeddings), looked up into X and updated by the fused sparse
// backward.
//
// Not profiling, the backward's sort (which needs only the ids) runs on a stream of its
// own from the step's start, beside the dense forward and backward
// (kernels/embedding_bag_backward.h embedding_backward_sort); the chunk sums and the update
// follow it on the compute stream once the bottom MLP's backward is done, or, with
// `concurrent_update` (options.overlap_embedding_backward, not with fp16 loss scaling,
// whose overflow check of every gradient must come before any update), on that stream
// once the interaction backward has written the tables' gradients, beside the bottom
// MLP's backward and the dense optimizer, which read none of what they write.
#include <memory>
#include <string>
#include <vector>

#include "gpu/event.h"
#include "kernels/embedding_bag_backward.h"
#include "model/gpu/embedding_stage.h"
#include "model/gpu/gpu_embeddings.h"

namespace hetrec::inline model::gpu_model {

class LocalEmbeddingStage final : public EmbeddingStage {
 public:
  struct Options {
    bool early_sort = true;         // not profiling
    bool concurrent_update = false;  // see above; needs early_sort
  };
  LocalEmbeddingStage(const ModelConfig& model, const OptimConfig& optim, Allocator& device, gpu::stream_t stream,
                      Options options);
  ~LocalEmbeddingStage() override;

  void begin_step(const EmbeddingStepArgs& a) override;
  void forward(const EmbeddingStepArgs& a, const std::function<void()>& bottom_forward) override;
  void after_interaction_backward(const EmbeddingStepArgs& a) override;
  void after_dense_backward(const EmbeddingStepArgs& a, float* dense_grads, int64_t dense_elements) override;
  void join(const EmbeddingStepArgs& a) override;

  int64_t min_predict_batch() const override { return 1; }
  const float* gather_logits(const float* local, int64_t, int64_t, kernels::StepScalars*, gpu::stream_t) override {
    return local;
  }

  void synchronize() override { stream_.synchronize(); }
  void wait(gpu::Stream& compute, const std::string& op) override;
  bool reserve(int64_t max_ids) override;
  void validate(const Batch& batch) const override { tables_->validate(batch); }
  const std::vector<DeviceMirror>& mirrors() override { return tables_->mirrors(); }
  std::vector<ShardTensor> shard_tensors() override;
  bool data_parallel() const override { return false; }
  int64_t host_bytes() const override { return static_cast<int64_t>(tables_->host_bytes()); }
  std::string describe(const ModelConfig& model) const override;
  void use_tuned(const kernels::TunedEmbeddingForward* forward, const kernels::TunedSparseUpdate* update) override {
    tuned_forward_ = forward;
    tuned_update_ = update;
  }

 private:
  // The chunk sums and the update of this step's sorted ids on `stream`.
  void update_after_sort(const EmbeddingStepArgs& a, gpu::stream_t stream);

  Options options_;
  int dim_;
  Allocator& device_;
  std::unique_ptr<GpuEmbeddings> tables_;
  gpu::Stream stream_;  // the early sort, and the concurrent update
  gpu::Event fork_{false}, sorted_{false}, update_done_{false};
  kernels::SparseUpdatePlan sort_plan_;  // the early sort's plan (points into workspace_)
  Tensor workspace_;                     // the fused backward's scratch
  int64_t id_capacity_ = 0;
  const kernels::TunedEmbeddingForward* tuned_forward_ = nullptr;
  const kernels::TunedSparseUpdate* tuned_update_ = nullptr;
};

}  // namespace hetrec::model::gpu_model
