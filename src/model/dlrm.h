#pragma once
// The CPU backend of DLRM and DLRM-DCNv2 (fp32):
//   dense features -> bottom MLP (ReLU after every layer) -> x (B x D)
//   sparse bags -> EmbeddingCollection (pooled, B x T x D)
//   DLRM:   dot interaction [x, pairwise dots]               -> top MLP -> logit -> BCE
//   DCNv2:  cross net on the concatenation [x, pooled T x D] -> top MLP -> logit -> BCE
// with ReLU after every top layer but the last. One train_step is forward, backward, the
// dense optimizer step and the embedding backward fused with the sparse optimizer.
#include <memory>

#include "dist/process_group.h"
#include "dist/sharding.h"
#include "model/model.h"
#include "model/model_config.h"
#include "nn/sharded_embedding_collection.h"

namespace hetrec::inline model {

// Throws ConfigError naming the config key (model.bottom_mlp, model.top_mlp,
// model.tables, model.embedding_dim, model.num_dense, model.cross_layers,
// model.cross_rank, model.dense_dtype, optim.dense, ...) and what was expected.
void validate_cpu_model_config(const ModelConfig& model, const OptimConfig& optim);

// Validates the configs, then builds the model with parameters initialised from
// model.init_seed (dense layers: the DLRM / TorchRec initialisations; tables: see
// EmbeddingCollection). state() names: "bottom_mlp.<i>.weight|bias",
// "cross_net.kernels.<l>" or "cross_net.W_kernels.<l>" / "cross_net.V_kernels.<l>",
// "cross_net.bias.<l>", "top_mlp.<i>.weight|bias" (PyTorch layouts), the dense
// optimizer slots "<param>.sum" (Adagrad) or "<param>.exp_avg|exp_avg_sq" (Adam), the
// embedding collection's state, and "step" (i64, 1 element: updates applied so far).
std::unique_ptr<Model> make_cpu_model(const ModelConfig& model, const OptimConfig& optim);

// The same network trained data-parallel over a process group: train_step and predict
// take the GLOBAL batch (every rank reads the same data stream) and each rank computes
// its contiguous slice of it, samples [B*r/N, B*(r+1)/N). Tables are sharded as `plan`
// says (nn/sharded_embedding_collection.h); dense layers are replicated, their gradients
// summed over ranks in buckets (non-blocking all-reduces started as the top and bottom
// networks finish their backward, completed after the embedding exchange), with the loss
// the mean over the global batch, so every rank applies the identical dense step.
// train_step returns the global mean loss; predict returns every sample's logit on every
// rank. state() holds the replicated tensors only (dense parameters, their optimizer
// slots, "step"); the tables are in embedding_shards().
class DistributedModel : public Model {
 public:
  virtual dist::ProcessGroup& group() = 0;
  // This rank's embedding blocks, sharing storage.
  virtual std::vector<ShardTensor> embedding_shards() = 0;
  // Collective: the state make_cpu_model's state() would hold (same names and order),
  // assembled on every rank.
  virtual std::vector<NamedTensor> gather_full_state() = 0;
};

// Throws ConfigError as make_cpu_model does and as plan_sharding reports.
std::unique_ptr<DistributedModel> make_distributed_cpu_model(const ModelConfig& model, const OptimConfig& optim,
                                                             const dist::ShardingPlan& plan,
                                                             dist::ProcessGroup& group);

}  // namespace hetrec::model::model
