#pragma once
// What a model is: architecture, tables, MLP widths, precisions. Parsed and validated
// from the [model] section of a config file by train/config.cpp.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace hetrec {

enum class Arch { dlrm, dcnv2 };
enum class Pooling { sum, mean };

struct TableConfig {
  std::string name;
  int64_t rows = 0;
  int hotness = 1;          // ids per bag (the mean when bags are variable-length)
  bool variable_bags = false;  // bag sizes drawn in [1, 2*hotness-1] instead of fixed
  Pooling pooling = Pooling::sum;
};

struct ModelConfig {
  Arch arch = Arch::dlrm;
  int num_dense = 13;
  int embedding_dim = 16;
  std::vector<TableConfig> tables;
  std::vector<int> bottom_mlp;  // layer widths; the last equals embedding_dim
  std::vector<int> top_mlp;     // layer widths; the last is 1 (the logit)
  // DLRM dot interaction: include the self-dot terms (the diagonal) or not.
  bool interaction_self = false;
  // DCNv2 cross network on the concatenation [bottom output, pooled embeddings].
  int cross_layers = 3;
  int cross_rank = 0;  // 0 = full-rank cross layers; >0 = low-rank U (V^T x)
  DType row_dtype = DType::f32;    // embedding row storage: fp32, fp16 or bf16
  DType dense_dtype = DType::f32;  // dense compute precision (CPU: fp32 only)
  uint64_t init_seed = 1;          // parameter initialisation

  int num_tables() const { return static_cast<int>(tables.size()); }
  // Width of the interaction output that feeds the top MLP.
  int interaction_width() const {
    const int f = num_tables() + 1;
    if (arch == Arch::dcnv2) return f * embedding_dim;
    return embedding_dim + (interaction_self ? f * (f + 1) / 2 : f * (f - 1) / 2);
  }
};

enum class OptimizerKind { sgd, adagrad, rowwise_adagrad, adam };

struct OptimConfig {
  OptimizerKind dense = OptimizerKind::adagrad;   // sgd, adagrad or adam
  OptimizerKind sparse = OptimizerKind::rowwise_adagrad;  // sgd, adagrad or rowwise_adagrad
  double lr = 0.005;         // dense learning rate
  double sparse_lr = 0.005;  // embedding learning rate
  double eps = 1e-8;         // Adagrad / Adam epsilon
  double adagrad_initial_accumulator = 0.0;
  double beta1 = 0.9, beta2 = 0.999;  // Adam
  // MLPerf DLRM schedule: linear warm-up over warmup_steps, constant, then polynomial
  // decay (power decay_power) to 0 over decay_steps starting at decay_start.
  int64_t warmup_steps = 0;
  int64_t decay_start = 0;  // 0 = no decay
  int64_t decay_steps = 0;
  double decay_power = 2.0;
};

}  // namespace hetrec
