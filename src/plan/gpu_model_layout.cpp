#include "plan/gpu_model_layout.h"

#include <algorithm>
#include <string>

#include "model/gpu/dense_layout.h"
#include "plan/recipe.h"

namespace hetrec::inline plan {
namespace {

std::vector<LinearShape> mlp_layers(int in, const std::vector<int>& widths, bool relu_last) {
  std::vector<LinearShape> layers;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    layers.push_back({in, widths[i], i + 1 < widths.size() || relu_last});
    in = widths[i];
  }
  return layers;
}

void add_mlp_tensors(const std::string& prefix, const std::vector<LinearShape>& layers,
                     std::vector<DenseTensorShape>& out) {
  for (std::size_t i = 0; i < layers.size(); ++i) {
    out.push_back({prefix + std::to_string(i) + ".weight", int64_t{layers[i].out} * layers[i].in});
    out.push_back({prefix + std::to_string(i) + ".bias", layers[i].out});
  }
}

}  // namespace

int GpuModelLayout::max_width(const std::vector<LinearShape>& layers) {
  int m = layers.empty() ? 0 : layers.front().in;
  for (const LinearShape& l : layers) m = std::max({m, l.in, l.out});
  return m;
}

GpuModelLayout gpu_model_layout(const ModelConfig& model) {
  GpuModelLayout g;
  g.arch = model.arch;
  g.num_dense = model.num_dense;
  g.num_tables = model.num_tables();
  g.dim = model.embedding_dim;
  g.feature_width = int64_t{g.num_tables + 1} * g.dim;
  g.interaction_width = model.interaction_width();
  g.bottom = mlp_layers(model.num_dense, model.bottom_mlp, /*relu_last=*/true);
  g.top = mlp_layers(static_cast<int>(g.interaction_width), model.top_mlp, /*relu_last=*/false);
  g.relu_backward = model.relu_backward;
  if (model.arch == Arch::dcnv2) {
    g.cross_layers = model.cross_layers;
    g.cross_rank = model.cross_rank;
    g.cross_residual_16bit = model.cross_residual_16bit;
  }
  // State order of the GPU model (model/gpu/gpu_dlrm.cpp): bottom MLP, cross net, top MLP.
  add_mlp_tensors("bottom_mlp.", g.bottom, g.dense_tensors);
  const int64_t n = g.interaction_width;
  for (int l = 0; l < g.cross_layers; ++l) {
    const std::string idx = std::to_string(l);
    if (g.cross_rank > 0) {
      g.dense_tensors.push_back({"cross_net.W_kernels." + idx, n * g.cross_rank});
      g.dense_tensors.push_back({"cross_net.V_kernels." + idx, n * g.cross_rank});
    } else {
      g.dense_tensors.push_back({"cross_net.kernels." + idx, n * n});
    }
    g.dense_tensors.push_back({"cross_net.bias." + idx, n});
  }
  add_mlp_tensors("top_mlp.", g.top, g.dense_tensors);
  int64_t padded = 0;
  for (const DenseTensorShape& t : g.dense_tensors) {
    g.dense_elements += t.numel;
    padded += gpu_model::dense_padded_elements(t.numel);
  }
  g.dense_flat_elements = gpu_model::dense_flat_elements(padded);
  for (const TableConfig& t : model.tables) g.ids_per_sample += t.hotness;
  return g;
}

GpuModelLayout gpu_model_layout(const ModelConfig& model, const Recipe& recipe) {
  GpuModelLayout g = gpu_model_layout(model);
  if (g.cross_layers > 0) g.cross_residual_16bit = recipe.cross_residual_16bit;
  return g;
}

}  // namespace hetrec::plan::plan
