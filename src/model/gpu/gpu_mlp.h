#pragma once
// A stack of Linear layers with ReLU after every layer (or all but the last) on the
// device: forward through cuBLASLt with the bias (and ReLU) fused into the GEMM's
// epilogue; backward with the ReLU mask and bias gradient in one pass, then the weight
// and input gradient GEMMs. Parameters live in a DenseParameters buffer.
//
// bf16 or fp16 precision: a layer whose widths are multiples of 8 (16-byte leading
// dimensions, what cuBLASLt's 16-bit tensor-core kernels want) runs its three GEMMs on
// 16-bit operands with fp32 accumulation, its weight read from the parameters' 16-bit
// copy. Operands are written in 16 bits where they are produced:
//  - a 16-bit layer feeding another writes its (ReLU) output only as the 16-bit operand
//    its successor reads, adding the bias's 16-bit copy as an autocast Linear does; its
//    backward masks with that copy (rounding keeps every sign; only values below fp16's
//    smallest subnormal become zero);
//  - the ReLU and bias-gradient pass writes a 16-bit layer's output gradient straight in
//    16 bits; with model.relu_backward = "epilogue", where a 16-bit ReLU layer
//    feeds another 16-bit layer and cuBLASLt fuses the epilogues, there is no such pass:
//    the forward GEMM stores the ReLU mask as bits (RELU_AUX_BIAS) and the successor's
//    input-gradient GEMM applies it, writes the 16-bit output gradient and sums the bias
//    gradient (DRELU_BGRAD; the library writes that sum in 16 bits, as an autocast Linear's
//    bias gradient is, and it is widened to fp32); "split" and "mask_pass" move the bias
//    gradient into the layer's weight-gradient GEMM, and "mask_pass" applies the ReLU by
//    a 16-bit pass after a plain input-gradient GEMM (model/gpu/relu_mask_fusion.h);
//  - an input from elsewhere is rounded by kernels/convert.h unless the caller hands in
//    its 16-bit copy.
// The GEMMs accumulate and write gradients in fp32. Other layers (e.g. the 13-wide first
// layer, the 1-wide logit layer) keep fp32 operands and run TF32 GEMMs, or fp32 ones with
// set_unaligned_precision.
#include <cstdint>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "gemm/cublaslt_gemm.h"
#include "gpu/platform.h"
#include "model/gpu/dense_parameters.h"
#include "model/gpu/relu_mask_fusion.h"
#include "model/gpu/side_lane.h"
#include "model/gpu/small_gemm_choice.h"
#include "model/gpu/sixteen_bit_widths.h"
#include "model/gpu/tuned_small_gemms.h"

namespace hetrec::inline model::gpu_model {

// Scratch shared by the layers of a model (bias-gradient partial sums).
struct Scratch {
  void* data = nullptr;
  std::size_t bytes = 0;
};

class GpuMlp {
 public:
  // Layer i's weight (out x in) and bias are parameters first_param + 2i and + 2i + 1.
  // input_16bit: the caller hands forward() a 16-bit copy of the input (used when the
  // first layer runs in 16 bits, so the MLP keeps none of its own). relu_backward: where
  // the ReLU backward runs (model.relu_backward; model/gpu/relu_mask_fusion.h).
  GpuMlp(int in_features, std::vector<int> widths, bool relu_last, const DenseParameters& params, int first_param,
         cublaslt::Precision precision, bool input_16bit, ReluBackward relu_backward);

  int in_features() const { return in_; }
  int out_features() const { return widths_.back(); }
  int max_width() const;
  int num_layers() const { return static_cast<int>(layers_.size()); }
  // Whether layer i runs its GEMMs on 16-bit operands.
  bool layer_16bit(int i) const { return layers_.at(static_cast<std::size_t>(i)).half; }
  // 16-bit mode: the precision of the layers that keep fp32 operands, tf32 (the default) or
  // fp32 (model.unaligned_gemms). Ignored in fp32 and tf32 mode.
  void set_unaligned_precision(cublaslt::Precision p) { unaligned_ = p; }

  // GEMMs of narrow layers that run a tuned small-GEMM kernel instead of cuBLASLt
  // (model/gpu/tuned_small_gemms.h); call before reserve(). The kernels must outlive the MLP.
  void use_small_gemms(std::vector<SmallGemmUse> uses);

  // With the model's selection: every decision taken so far between a small-GEMM kernel
  // and cuBLASLt, named `prefix`.<layer> <pass>.
  std::vector<SmallGemmDecision> small_gemm_decisions(const std::string& prefix) const;

  // Activations and gradient buffers for `batch` samples (reallocated only when larger).
  void reserve(int64_t batch, Allocator& device);

  // x: batch x in (row stride ldx; may be null when x16 serves the first layer). x16: the
  // input's 16-bit copy (batch x in, contiguous), required when constructed with
  // input_16bit and the first layer runs in 16 bits. The last layer writes to `out` (row
  // stride ld_out) when given, else to the MLP's own buffer. Returns the output pointer.
  float* forward(cublaslt::Gemm& gemm, const float* x, int64_t ldx, int64_t batch, float* out, int64_t ld_out,
                 gpu::stream_t stream, const void* x16 = nullptr);

  // Run the weight-gradient GEMMs on `lane` beside the input-gradient chain (null: all on
  // the backward's stream). The GEMM object handed to backward() needs its side lane.
  // Not owned; it must outlive the MLP.
  void set_side_lane(SideLane* lane) { side_ = lane; }

  // dy: gradient of the last forward's output (row stride ld_dy; overwritten: the ReLU
  // mask is applied in place). Writes every parameter gradient, and dx (batch x in, row
  // stride ldx_grad) unless null; all of them are complete in `stream`'s order on return.
  void backward(cublaslt::Gemm& gemm, const float* x, int64_t ldx, float* dy, int64_t ld_dy, float* dx,
                int64_t ldx_grad, int64_t batch, const Scratch& scratch, gpu::stream_t stream);

 private:
  // What a layer that does not run in 16 bits uses: the configured fp32 or tf32, and under
  // 16-bit compute the unaligned layers' precision.
  cublaslt::Precision fp32_precision() const { return half_type_ == DType::f32 ? precision_ : unaligned_; }
  struct Layer {
    int in = 0, out = 0;
    bool relu = false;
    bool half = false;  // GEMMs on 16-bit operands
    bool out16 = false;  // output kept only as the next (16-bit) layer's operand
    const uint16_t* weight16 = nullptr;
    float* weight = nullptr;
    float* bias = nullptr;
    const uint16_t* bias16 = nullptr;  // the bias's 16-bit copy (what a 16-bit output adds)
    float* grad_weight = nullptr;
    float* grad_bias = nullptr;
  };
  int in_;
  std::vector<int> widths_;
  std::vector<Layer> layers_;
  cublaslt::Precision precision_;
  DType half_type_ = DType::f32;  // bf16 or f16 with 16-bit precision, else f32
  cublaslt::Precision unaligned_ = cublaslt::Precision::tf32;
  int64_t capacity_ = 0;
  bool input_16bit_ = false;
  // [i]: output of layer i: fp32, or 16-bit when out16 (unused for the last when redirected)
  std::vector<Tensor> activations_;
  Tensor grad_buffers_[2];           // ping-pong gradients between layers
  std::vector<Tensor> inputs16_;     // [i]: 16-bit copy of layer i's input, where this MLP rounds it
  std::vector<const void*> operands16_;  // [i]: layer i's 16-bit input operand in the last forward
  Tensor grad16_[2];                 // the current layer's output gradient in 16 bits (ping-pong)
  Tensor bias_grad16_;               // a fused layer's bias gradient as the epilogue writes it (16 bits)
  ReluMaskFusion fusion_;  // where the ReLU goes into the GEMMs' epilogues
  float* last_output_ = nullptr;
  int64_t last_ld_ = 0;
  SmallGemmChoice small_gemms_;  // the narrow layers' GEMMs that run a small-GEMM kernel
  SideLane* side_ = nullptr;
};

}  // namespace hetrec::model::gpu_model
