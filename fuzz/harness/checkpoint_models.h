#pragma once
// The models whose state the checkpoint target loads files into. The seed generator
// (fuzz/make_seeds.cpp) writes checkpoints of exactly these, so seeds reach the
// per-tensor checks of load_checkpoint.
#include <memory>
#include <string_view>

#include "model/model.h"

namespace hetrec::fuzz {

// Two small models with different state layouts: DLRM with Adagrad and row-wise
// Adagrad slots, and low-rank DCNv2 with Adam slots and fp16 embedding rows.
inline constexpr std::string_view kCheckpointModelConfigs[] = {
    R"([model]
arch = "dlrm"
num_dense = 3
embedding_dim = 4
table_rows = [4, 3]
bottom_mlp = [8, 4]
top_mlp = [4, 1]
[optim]
dense = "adagrad"
sparse = "rowwise_adagrad"
)",
    R"([model]
arch = "dcnv2"
num_dense = 2
embedding_dim = 2
table_rows = [5, 2, 3]
bottom_mlp = [2]
top_mlp = [3, 1]
cross_layers = 2
cross_rank = 2
row_dtype = "fp16"
[optim]
dense = "adam"
sparse = "adagrad"
)",
};

// Builds model `which` (an index into kCheckpointModelConfigs) on the CPU backend.
std::unique_ptr<Model> make_checkpoint_model(std::size_t which);

}  // namespace hetrec::fuzz
