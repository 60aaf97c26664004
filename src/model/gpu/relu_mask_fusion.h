#pragma once
// Where an MLP's ReLU backward goes when a 16-bit ReLU layer feeds another 16-bit layer:
// into the successor's input-gradient GEMM, which writes the layer's 16-bit output
// gradient, so no fp32 gradient and no separate ReLU-backward pass over it exist.
//   epilogue   the forward GEMM stores the ReLU mask as bits (RELU_AUX_BIAS); the
//              input-gradient GEMM applies it and sums the layer's bias gradient
//              (DRELU_BGRAD);
//   split      as epilogue, but the input-gradient GEMM only applies the mask (DRELU) and
//              the layer's own weight-gradient GEMM dW = dz^T x sums the bias gradient
//              (BGRADB: the sum runs along the batch, which that GEMM reduces over anyway);
//   mask_pass  no mask bits: the input-gradient GEMM writes its 16-bit product plainly, a
//              16-bit pass zeroes it where the layer's 16-bit output is not positive
//              (kernels/relu_mask.h), and the weight-gradient GEMM sums the bias gradient
//              as in split.
// Unless the pass is asked for ("pass"), decided per batch by the library's support of the
// GEMMs (split and mask_pass fall back to DRELU_BGRAD where they lack it); holds the mask
// buffers.
#include <cstdint>
#include <map>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "gemm/cublaslt_gemm.h"
#include "model/model_config.h"

namespace hetrec::inline model::gpu_model {

class ReluMaskFusion {
 public:
  // One MLP layer as the fusion sees it.
  struct Layer {
    int in = 0, out = 0;
    bool relu = false;
    bool half = false;  // GEMMs on 16-bit operands
  };
  ReluMaskFusion() = default;  // no layers
  // half_type: the 16-bit operand type (bf16 or f16; f32 when no layer runs in 16 bits).
  // mode: model.relu_backward (ReluBackward::pass: no layer fuses).
  ReluMaskFusion(std::vector<Layer> layers, DType half_type, cublaslt::Precision precision, ReluBackward mode);

  // Whether layer i can fuse at all (not "pass", and a 16-bit ReLU layer followed by a
  // 16-bit layer).
  bool fusable(int i) const;
  // Layer i's forward GEMM storing its mask; layer i + 1's input-gradient GEMM writing
  // layer i's 16-bit output gradient (ld_dz: layer i + 1's output gradient's leading
  // dimension) with `epilogue`: drelu_bgrad (also summing layer i's bias gradient), drelu,
  // or none (mask_pass); layer i's weight-gradient GEMM dW = dz^T x summing the bias
  // gradient (split, mask_pass): its 16-bit dz (batch x out) and input (batch x in), dense.
  cublaslt::Problem forward_problem(int i, int64_t batch) const;
  cublaslt::Problem backward_problem(int i, int64_t batch, int64_t ld_dz, cublaslt::Epilogue epilogue) const;
  cublaslt::Problem weight_gradient_problem(int i, int64_t batch) const;

  // Which layers fuse at `batch`, and how (decided once per batch); the questions below
  // answer for it until the next call. Call at the start of each forward.
  void choose(cublaslt::Gemm& gemm, int64_t batch);
  // Layer i's ReLU backward runs in layer i + 1's input-gradient step.
  bool fused(int i) const { return current_.at(static_cast<std::size_t>(i)) != kNotFused; }
  // Layer i's forward GEMM stores the mask bits (epilogue, split).
  bool stores_mask(int i) const {
    const char c = current_.at(static_cast<std::size_t>(i));
    return c == kInputGradient || c == kSplit;
  }
  // Layer i fuses and its weight-gradient GEMM sums its bias gradient (split, mask_pass).
  bool bias_in_weight_gemm(int i) const {
    const char c = current_.at(static_cast<std::size_t>(i));
    return c == kSplit || c == kMaskPass;
  }
  // The epilogue of the input-gradient GEMM that writes layer i's output gradient.
  cublaslt::Epilogue backward_epilogue(int i) const;
  // The mask bits of a fusable layer i (batch x out, as cuBLASLt lays them out); unused
  // where it fuses as mask_pass.
  void* mask(int i) const { return masks_.at(static_cast<std::size_t>(i)).raw(); }

  // Mask buffers for `batch` samples.
  void reserve(int64_t batch, Allocator& device);

 private:
  std::vector<Layer> layers_;
  DType half_type_ = DType::f32;
  cublaslt::Precision precision_ = cublaslt::Precision::fp32;
  ReluBackward mode_ = ReluBackward::pass;
  static constexpr char kNotFused = 0, kInputGradient = 1, kSplit = 2, kMaskPass = 3;
  std::vector<Tensor> masks_;                  // [i]: defined where layer i is fusable
  std::vector<char> current_;                  // [i]: how layer i fuses at the chosen batch
  std::map<int64_t, std::vector<char>> by_batch_;
};

}  // namespace hetrec::model::gpu_model
