#pragma once
// A trained model out of hetrec: the parameters of a checkpoint (dense layers and
// embedding tables, without optimizer state) as a safetensors file, and a JSON
// description of the network that python/hetrec_torch.py and python/hetrec_numpy.py
// rebuild it from (docs/export.md).
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/model_config.h"

namespace hetrec::inline train {

// One parameter of the network: its checkpoint name, what it is and its expected layout.
//   role "bottom_mlp" / "top_mlp": layer, kind "weight" (out x in) or "bias" (out)
//   role "cross_net": layer, kind "kernel" (n x n), "W_kernel" (U: n x r),
//                     "V_kernel" (V: r x n) or "bias" (n)
//   role "embedding": table (its name), kind "weight" (rows x dim, model.row_dtype)
struct ExportedParameter {
  std::string name;
  std::string role;
  std::string kind;
  int layer = -1;      // MLP and cross layers; -1 for tables
  std::string table;   // embedding tables
  std::vector<int64_t> shape;
  DType dtype = DType::f32;
};

// Every parameter of the network `model` describes, in the order of a checkpoint.
std::vector<ExportedParameter> exported_parameters(const ModelConfig& model);

// The JSON model description (text): format and version, arch, num_dense, embedding_dim,
// tables (name, rows, pooling, hotness, variable_bags), bottom_mlp, top_mlp,
// interaction_self, cross_layers, cross_rank, row_dtype, the output ("logit": the
// prediction is its sigmoid), the checkpoint it came from, and the parameters (name ->
// role, kind, layer or table, shape, dtype).
std::string model_description(const ModelConfig& model, const std::string& checkpoint, int64_t step);

// The description's file beside a safetensors output: "<stem>.json" for "<stem>.safetensors".
std::string description_path(const std::string& safetensors_path);

struct ExportSummary {
  std::string safetensors;   // written file
  std::string description;   // written file
  int64_t step = 0;          // of the checkpoint
  int64_t parameters = 0;    // tensors exported
  int64_t bytes = 0;         // tensor bytes exported
};

// Reads the single-file checkpoint `checkpoint` (verified whole first), checks that it was
// written for `model` (its signature) and holds every parameter with the expected shape
// and dtype, and writes `output` (".safetensors") and its description, each through a
// temporary file renamed into place. Throws ConfigError when `output` does not end in
// ".safetensors" or would replace the checkpoint, CheckpointError naming the file and the
// tensor when the checkpoint is damaged or does not match, IoError when a write fails.
ExportSummary export_safetensors(const ModelConfig& model, const std::string& checkpoint, const std::string& output);

}  // namespace hetrec::train::train
