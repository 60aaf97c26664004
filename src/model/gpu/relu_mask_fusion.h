#pragma once
// Where an MLP's ReLU goes into cuBLASLt's epilogues: a 16-bit ReLU layer feeding another
// 16-bit layer stores its ReLU mask as bits in its forward GEMM (RELU_AUX_BIAS), and the
// successor's input-gradient GEMM applies it, writes the layer's 16-bit output gradient
// and sums its bias gradient (DRELU_BGRAD), so no separate ReLU-backward pass runs.
// Unless the pass is asked for (model.relu_backward = "pass"), decided per batch by the
// library's support of both GEMMs; holds the mask buffers.
#include <cstdint>
#include <map>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "gemm/cublaslt_gemm.h"

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
  // enabled: whether any layer may fuse (model.relu_backward = "epilogue", the default).
  ReluMaskFusion(std::vector<Layer> layers, DType half_type, cublaslt::Precision precision, bool enabled);

  // Whether layer i can fuse at all (enabled, and a 16-bit ReLU layer followed by a 16-bit layer).
  bool fusable(int i) const;
  // Layer i's forward GEMM storing its mask, and layer i + 1's input-gradient GEMM applying
  // it (ld_dz: layer i + 1's output gradient's leading dimension).
  cublaslt::Problem forward_problem(int i, int64_t batch) const;
  cublaslt::Problem backward_problem(int i, int64_t batch, int64_t ld_dz) const;

  // Which layers fuse at `batch` (decided once per batch); fused() answers for it until
  // the next call. Call at the start of each forward.
  void choose(cublaslt::Gemm& gemm, int64_t batch);
  bool fused(int i) const { return current_.at(static_cast<std::size_t>(i)) != 0; }
  // The mask bits of a fusable layer i (batch x out, as cuBLASLt lays them out).
  void* mask(int i) const { return masks_.at(static_cast<std::size_t>(i)).raw(); }

  // Mask buffers for `batch` samples.
  void reserve(int64_t batch, Allocator& device);

 private:
  std::vector<Layer> layers_;
  DType half_type_ = DType::f32;
  cublaslt::Precision precision_ = cublaslt::Precision::fp32;
  bool enabled_ = false;
  std::vector<Tensor> masks_;                  // [i]: defined where layer i is fusable
  std::vector<char> current_;                  // [i]: fused at the chosen batch
  std::map<int64_t, std::vector<char>> by_batch_;
};

}  // namespace hetrec::model::gpu_model
