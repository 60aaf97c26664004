#pragma once
// The structure of the GPU model (model/gpu/) as the planner's memory and step models see
// it: its layers, its dense parameter tensors and the widths of its activation buffers.
// Both models read the GPU code's shapes from here, so that one place follows that code;
// the rules the GPU code applies to them (the dense tensors' alignment, which layers run
// 16-bit GEMMs) are its own constexpr functions (model/gpu/dense_layout.h,
// model/gpu/sixteen_bit_widths.h), called here.
#include <cstdint>
#include <string>
#include <vector>

#include "model/gpu/sixteen_bit_widths.h"
#include "model/model_config.h"

namespace hetrec::inline plan {

struct LinearShape {
  int in = 0;
  int out = 0;
  bool relu = false;

  // With 16-bit dense compute, whether the layer runs its GEMMs on 16-bit operands.
  bool sixteen_bit_eligible() const { return gpu_model::sixteen_bit_widths(in, out); }
};

struct DenseTensorShape {
  std::string name;
  int64_t numel = 0;
};

struct Recipe;  // plan/recipe.h

struct GpuModelLayout {
  Arch arch = Arch::dlrm;
  int num_dense = 0;
  int num_tables = 0;
  int dim = 0;
  int64_t feature_width = 0;      // (T + 1) x D: bottom output and pooled embeddings side by side
  int64_t interaction_width = 0;  // the top MLP's input
  std::vector<LinearShape> bottom;  // every layer has a ReLU (relu_last = true)
  std::vector<LinearShape> top;     // ReLU on all but the last
  int cross_layers = 0;             // DCNv2 only; 0 = the top MLP reads the concatenation
  int cross_rank = 0;               // 0 = full rank
  bool cross_residual_16bit = false;  // model.cross_residual = "16bit" (used when the cross net is 16-bit)
  ReluBackward relu_backward = ReluBackward::epilogue;  // model.relu_backward
  std::vector<DenseTensorShape> dense_tensors;  // state order: bottom, cross, top
  int64_t dense_elements = 0;       // without padding
  int64_t dense_flat_elements = 0;  // with every tensor's alignment (model/gpu/dense_layout.h)
  double ids_per_sample = 0.0;      // sum of table hotness (the mean bag size with variable bags)

  // Widest input or output of an MLP (its gradient ping-pong buffers are B x this).
  static int max_width(const std::vector<LinearShape>& layers);
  // With 16-bit dense compute, whether the cross net runs 16-bit GEMMs.
  bool cross_sixteen_bit_eligible() const {
    return gpu_model::sixteen_bit_widths(static_cast<int>(interaction_width), cross_rank);
  }

  // Where 16-bit dense compute writes its operands (model/gpu/gpu_mlp.cpp,
  // gpu_cross_net.cpp, gpu_dlrm.cpp); `sixteen` is whether the recipe's GEMMs are 16-bit.
  // Layer i of an MLP writes its output only as the 16-bit operand of layer i + 1 when
  // both run 16-bit GEMMs.
  static bool mlp_output_16bit(const std::vector<LinearShape>& layers, std::size_t i, bool sixteen) {
    return sixteen && i + 1 < layers.size() && layers[i].sixteen_bit_eligible() &&
           layers[i + 1].sixteen_bit_eligible();
  }
  // Whether layer i's ReLU backward runs as the 16-bit mask pass after its successor's
  // plain 16-bit input-gradient GEMM, the bias gradient in its weight-gradient GEMM
  // (model.relu_backward = "mask_pass", model/gpu/relu_mask_fusion.h).
  static bool mlp_mask_pass(const std::vector<LinearShape>& layers, std::size_t i, bool sixteen, ReluBackward mode) {
    return mode == ReluBackward::mask_pass && layers[i].relu && mlp_output_16bit(layers, i, sixteen);
  }
  // Whether a 16-bit layer i rounds its own input to a 16-bit copy: not when the previous
  // layer hands it over in 16 bits, nor for the first when the caller does (input_16bit).
  static bool mlp_rounds_input(const std::vector<LinearShape>& layers, std::size_t i, bool sixteen,
                               bool input_16bit) {
    if (!sixteen || !layers[i].sixteen_bit_eligible()) return false;
    return i == 0 ? !input_16bit : !mlp_output_16bit(layers, i - 1, sixteen);
  }
  // The cross net runs 16-bit GEMMs and hands the top MLP its output's 16-bit copy.
  bool cross_16bit(bool sixteen) const {
    return sixteen && arch == Arch::dcnv2 && cross_layers > 0 && cross_sixteen_bit_eligible();
  }
  // The cross net's last output is kept in fp32 too (not when the top MLP's first layer
  // reads only the 16-bit copy).
  bool cross_output_fp32(bool sixteen) const {
    return !(cross_16bit(sixteen) && !top.empty() && top.front().sixteen_bit_eligible());
  }
  // Whether cross layer l's output x_{l+1} is kept in fp32 (gpu_cross_net.cpp: all but the
  // last with the fp32 residual stream, none of those with the 16-bit one; the last as
  // cross_output_fp32 says).
  bool cross_layer_output_fp32(int l, bool sixteen) const {
    if (l + 1 == cross_layers) return cross_output_fp32(sixteen);
    return !(cross_16bit(sixteen) && cross_residual_16bit);
  }
};

GpuModelLayout gpu_model_layout(const ModelConfig& model);
// The same with the recipe's choices that change the engine's buffers (the cross net's
// 16-bit residual stream).
GpuModelLayout gpu_model_layout(const ModelConfig& model, const Recipe& recipe);

}  // namespace hetrec::plan::plan
