#pragma once
// The structure of the GPU model (model/gpu/) as the planner's memory and step models see
// it: its layers, its dense parameter tensors and the widths of its activation buffers.
// Both models read the GPU code's shapes from here, so that one place follows that code.
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace hetrec {

// Dense tensors start on 64-float (256-byte) boundaries in the flat parameter, gradient
// and optimizer-slot buffers (model/gpu/dense_parameters.cpp, kAlignElements).
inline constexpr int64_t kDenseAlignElements = 64;
// The device id buffer and the batch staging grow to 1.25x the ids of the batch that
// outgrew them, plus one (model/gpu/batch_staging.cpp, kGrowth).
inline constexpr double kIdCapacityGrowth = 1.25;

// With 16-bit dense compute, a layer runs its GEMMs on 16-bit operands only when its
// widths are multiples of this (cuBLASLt's 16-bit tensor-core kernels want 16-byte
// leading dimensions); others run fp32 GEMMs (model/gpu/gpu_mlp.cpp, gpu_cross_net.cpp,
// kSixteenBitWidthMultiple).
inline constexpr int kSixteenBitWidthMultiple = 8;

struct LinearShape {
  int in = 0;
  int out = 0;
  bool relu = false;

  bool sixteen_bit_eligible() const { return in % kSixteenBitWidthMultiple == 0 && out % kSixteenBitWidthMultiple == 0; }
};

struct DenseTensorShape {
  std::string name;
  int64_t numel = 0;
};

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
  std::vector<DenseTensorShape> dense_tensors;  // state order: bottom, cross, top
  int64_t dense_elements = 0;       // without padding
  int64_t dense_flat_elements = 0;  // with the 64-float alignment of every tensor
  double ids_per_sample = 0.0;      // sum of table hotness (the mean bag size with variable bags)

  // Widest input or output of an MLP (its gradient ping-pong buffers are B x this).
  static int max_width(const std::vector<LinearShape>& layers);
  // With 16-bit dense compute, whether the cross net runs 16-bit GEMMs.
  bool cross_sixteen_bit_eligible() const {
    return interaction_width % kSixteenBitWidthMultiple == 0 && cross_rank % kSixteenBitWidthMultiple == 0;
  }

  // Where 16-bit dense compute writes its operands (model/gpu/gpu_mlp.cpp,
  // gpu_cross_net.cpp, gpu_dlrm.cpp); `sixteen` is whether the recipe's GEMMs are 16-bit.
  // Layer i of an MLP writes its output only as the 16-bit operand of layer i + 1 when
  // both run 16-bit GEMMs.
  static bool mlp_output_16bit(const std::vector<LinearShape>& layers, std::size_t i, bool sixteen) {
    return sixteen && i + 1 < layers.size() && layers[i].sixteen_bit_eligible() &&
           layers[i + 1].sixteen_bit_eligible();
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
};

GpuModelLayout gpu_model_layout(const ModelConfig& model);

}  // namespace hetrec
