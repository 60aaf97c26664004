#pragma once
// A recipe: the software choices the planner makes for one model on one accelerator:
// batch size, dense (GEMM) precision, embedding row precision and where each table lives.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "model/model_config.h"

namespace hetrec {

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

struct Recipe {
  std::string hardware;  // hardware description name, e.g. "h200_sxm"
  int64_t batch = 0;
  DensePrecision dense = DensePrecision::fp32;
  DType row_dtype = DType::f32;           // fp32, fp16 or bf16 (16-bit rows use stochastic rounding)
  std::vector<TablePlacement> placement;  // one per table of the model

  int host_tables() const;
};

std::string_view dense_precision_name(DensePrecision p);
// Throws ConfigError naming `key` for anything but fp32, tf32, bf16.
DensePrecision parse_dense_precision(std::string_view name, std::string_view key);
std::string_view placement_name(TablePlacement p);

// The recipe a config describes as it stands: model.dense_dtype / allow_tf32 / row_dtype,
// the tables named in model.host_tables in host memory, every other table in HBM.
Recipe recipe_of_model(const ModelConfig& model, int64_t batch, const std::string& hardware);

// Throws ConfigError when the recipe does not match the model (placement count, row
// dtype other than fp32/fp16/bf16, batch < 1).
void validate_recipe(const Recipe& recipe, const ModelConfig& model);

// "batch 65536, tf32 GEMMs, fp16 rows, all tables in HBM" (or "..., 4 tables in host
// memory (t0, t9, t19, t20)").
std::string describe_recipe(const Recipe& recipe, const ModelConfig& model);

}  // namespace hetrec
