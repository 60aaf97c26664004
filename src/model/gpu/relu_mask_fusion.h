#pragma once
// Where an MLP's ReLU goes into cuBLASLt's epilogues: a 16-bit ReLU layer feeding another
// 16-bit layer stores its ReLU mask as bits in its forward GEMM (RELU_AUX_BIAS), and the
// successor's input-gradient GEMM applies it and writes the layer's 16-bit output
// gradient, so no separate ReLU-backward pass runs. The layer's bias gradient is summed by
// that input-gradient GEMM too (DRELU_BGRAD; model.relu_backward = "epilogue") or, with
// "split", by the layer's own weight-gradient GEMM (the input-gradient GEMM's DRELU, then
// the weight GEMM's BGRADB: the sum runs along the batch, which that GEMM reduces over
// anyway). Unless the pass is asked for ("pass"), decided per batch by the library's
// support of the GEMMs (split falls back to DRELU_BGRAD where it lacks it); holds the mask
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
  // Layer i's forward GEMM storing its mask; layer i + 1's input-gradient GEMM applying it
  // (ld_dz: layer i + 1's output gradient's leading dimension), summing layer i's bias
  // gradient unless `split`; layer i's weight-gradient GEMM dW = dz^T x summing it (split):
  // its 16-bit dz (batch x out) and input (batch x in), dense.
  cublaslt::Problem forward_problem(int i, int64_t batch) const;
  cublaslt::Problem backward_problem(int i, int64_t batch, int64_t ld_dz, bool split) const;
  cublaslt::Problem weight_gradient_problem(int i, int64_t batch) const;

  // Which layers fuse at `batch`, and how (decided once per batch); fused() and split()
  // answer for it until the next call. Call at the start of each forward.
  void choose(cublaslt::Gemm& gemm, int64_t batch);
  bool fused(int i) const { return current_.at(static_cast<std::size_t>(i)) != kNotFused; }
  // Layer i fuses and its weight-gradient GEMM sums its bias gradient.
  bool split(int i) const { return current_.at(static_cast<std::size_t>(i)) == kSplit; }
  // The mask bits of a fusable layer i (batch x out, as cuBLASLt lays them out).
  void* mask(int i) const { return masks_.at(static_cast<std::size_t>(i)).raw(); }

  // Mask buffers for `batch` samples.
  void reserve(int64_t batch, Allocator& device);

 private:
  std::vector<Layer> layers_;
  DType half_type_ = DType::f32;
  cublaslt::Precision precision_ = cublaslt::Precision::fp32;
  ReluBackward mode_ = ReluBackward::pass;
  static constexpr char kNotFused = 0, kInputGradient = 1, kSplit = 2;
  std::vector<Tensor> masks_;                  // [i]: defined where layer i is fusable
  std::vector<char> current_;                  // [i]: how layer i fuses at the chosen batch
  std::map<int64_t, std::vector<char>> by_batch_;
};

}  // namespace hetrec::model::gpu_model
