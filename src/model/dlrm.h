#pragma once
// The CPU backend of DLRM and DLRM-DCNv2 (fp32):
//   dense features -> bottom MLP (ReLU after every layer) -> x (B x D)
//   sparse bags -> EmbeddingCollection (pooled, B x T x D)
//   DLRM:   dot interaction [x, pairwise dots]               -> top MLP -> logit -> BCE
//   DCNv2:  cross net on the concatenation [x, pooled T x D] -> top MLP -> logit -> BCE
// with ReLU after every top layer but the last. One train_step is forward, backward, the
// dense optimizer step and the embedding backward fused with the sparse optimizer.
#include <memory>

#include "model/model.h"
#include "model/model_config.h"

namespace hetrec {

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

}  // namespace hetrec
