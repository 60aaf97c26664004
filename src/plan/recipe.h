#pragma once
// A recipe: the software choices the planner makes for one model on one accelerator (or
// on N accelerators of one host): batch size, dense (GEMM) precision, embedding row
// precision, where each table lives, and with several GPUs how each table is sharded.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "dist/sharding.h"
#include "model/model_config.h"

namespace hetrec::inline plan {

// fp32: fp32 GEMMs on the SIMT pipes; tf32: fp32 operands on the TF32 tensor pipe
// (model.allow_tf32); bf16: bf16 operands, fp32 accumulation (model.dense_dtype = bf16);
// fp16: fp16 operands, fp32 accumulation, dynamic loss scaling (model.dense_dtype = fp16).
enum class DensePrecision { fp32, tf32, bf16, fp16 };
inline constexpr DensePrecision kAllDensePrecisions[] = {DensePrecision::fp32, DensePrecision::tf32,
                                                         DensePrecision::bf16, DensePrecision::fp16};
// Whether the GEMMs run on 16-bit operands (bf16 or fp16).
inline bool sixteen_bit_dense(DensePrecision p) { return p == DensePrecision::bf16 || p == DensePrecision::fp16; }

// hbm: the table's rows and optimizer state live in device memory. host: in page-locked
// host memory, read and updated by the GPU over the host link.
enum class TablePlacement { hbm, host };

// How one table is sharded over the GPUs of a data-parallel job (dist/sharding.h).
struct TableSharding {
  dist::ShardingType type = dist::ShardingType::table_wise;
  int owner = 0;  // table_wise: the rank that holds the table
  // row_wise: the blocks' bounds (gpus + 1 values from 0 to the table's rows), or empty
  // for blocks of equal rows (dist::TableShardingChoice::row_bounds).
  std::vector<int64_t> row_bounds{};

  bool operator==(const TableSharding&) const = default;
};

struct Recipe {
  std::string hardware;  // hardware description name, e.g. "h200_sxm"
  int64_t batch = 0;     // the global batch: with N GPUs each trains batch / N samples
  DensePrecision dense = DensePrecision::fp32;
  DType row_dtype = DType::f32;           // fp32, fp16 or bf16 (16-bit rows use stochastic rounding)
  // 16-bit dense compute: the DCNv2 cross net keeps its residual stream in 16 bits
  // (model.cross_residual = "16bit"; model/gpu/gpu_cross_net.h).
  bool cross_residual_16bit = false;
  // 16-bit dense compute: the layers that keep fp32 operands (widths not multiples of 8)
  // run TF32 GEMMs (model.unaligned_gemms = "tf32"), else fp32 ones.
  bool unaligned_tf32 = true;
  std::vector<TablePlacement> placement;  // one per table of the model
  // GPUs of one host the job runs on (`mpirun -np gpus hetrec train`); 1: the
  // single-device engine, and `sharding` is empty.
  int gpus = 1;
  std::vector<TableSharding> sharding;  // gpus > 1: one per table of the model
  // gpus > 1: the element type of the embedding exchanges (dist::ShardingSpec).
  DType exchange_dtype = DType::f32;

  int host_tables() const;
  // Tables of each sharding type (gpus > 1).
  int sharded_tables(dist::ShardingType type) const;
};

std::string_view dense_precision_name(DensePrecision p);
// Throws ConfigError naming `key` for anything but fp32, tf32, bf16.
DensePrecision parse_dense_precision(std::string_view name, std::string_view key);
std::string_view placement_name(TablePlacement p);

// The recipe a config describes as it stands: model.dense_dtype / allow_tf32 / row_dtype,
// the tables named in model.host_tables in host memory, every other table in HBM.
Recipe recipe_of_model(const ModelConfig& model, int64_t batch, const std::string& hardware);

// Gives the recipe `gpus` GPUs with the sharding `spec` resolved for them
// (dist::plan_sharding: its defaults and errors); gpus = 1 clears the sharding.
void apply_sharding(Recipe& recipe, const ModelConfig& model, const dist::ShardingSpec& spec, int gpus);

// The recipe's sharding as the [recipe.sharding] a config carries (every table named),
// and resolved for its GPUs. With one GPU: every table table_wise on rank 0.
dist::ShardingSpec sharding_spec(const Recipe& recipe, const ModelConfig& model);
dist::ShardingPlan sharding_plan(const Recipe& recipe, const ModelConfig& model);

// Throws ConfigError when the recipe does not match the model (placement count, row
// dtype other than fp32/fp16/bf16, batch < 1; with several GPUs: one sharding per table,
// owners among the GPUs, a row_wise table with fewer rows than GPUs, a column_wise
// table whose dim gives some GPU fewer than 2 columns, a batch smaller than the GPUs).
void validate_recipe(const Recipe& recipe, const ModelConfig& model);

// Why the data-parallel GPU engine (model/gpu/sharded_embeddings.h) cannot run the
// recipe's sharding, or "" when it can: a mean-pooled table sharded row_wise (the row
// blocks' partial sums cannot be divided by the bag's length), a column_wise table under
// row-wise Adagrad (its accumulator needs every column's gradient).
std::string gpu_sharding_unsupported(const Recipe& recipe, const ModelConfig& model, const OptimConfig& optim);
// Whether `type` is legal for table `t` on `gpus` GPUs under the GPU engine: plan_sharding
// accepts it and the engine supports it (gpu_sharding_unsupported).
bool gpu_sharding_allowed(dist::ShardingType type, const ModelConfig& model, const OptimConfig& optim, std::size_t t,
                          int gpus);

// "batch 65536, tf32 GEMMs, fp16 rows, all tables in HBM" (or "..., 4 tables in host
// memory (t0, t9, t19, t20)"); with several GPUs "..., 2 GPUs: 22 table_wise, 4 row_wise
// (t0, t9, t19, t20)".
std::string describe_recipe(const Recipe& recipe, const ModelConfig& model);

// The residual stream's name as recipe files and results spell it (`cross_residual`):
// "16bit" or "fp32"; parse_cross_residual is its inverse (nullopt for any other text).
std::string_view cross_residual_name(bool sixteen_bit);
std::optional<bool> parse_cross_residual(std::string_view name);

}  // namespace hetrec::plan::plan
