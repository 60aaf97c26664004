#pragma once
// DCNv2 cross network on the device: x_{l+1} = x0 * (W_l x_l + b_l) + x_l, full rank or
// low rank (W_l = U_l V_l), with the GEMMs (bias fused) on cuBLASLt and the element-wise
// parts in tunable/cross_net/cross_net.h. Parameters live in a DenseParameters buffer in the CPU
// CrossNet's order: per layer the kernel (or U, then V), then the bias.
//
// bf16 or fp16 precision (width and rank multiples of 8): every GEMM reads 16-bit
// operands and accumulates in fp32, and the GEMMs write their outputs in 16 bits as an
// autocast Linear does (z_l = W_l x_l + b_l with the bias's 16-bit copy, V x_l, and in
// the backward d(V x_l) and the chain term through x_l), except the parameter gradients
// and the bottom layer's term into dL/dx0. The element-wise passes write the other
// operands where they are produced (the forward x_{l+1} and its 16-bit copy, the backward
// dz in 16 bits); only x_0 is rounded by a separate pass. The residual stream x_l, the
// chain and direct gradients of x0 and every parameter gradient stay fp32, unless
// set_residual_16bit(true) (model.cross_residual = "16bit"): then x_{l+1} = x0 * z_l + x_l
// is formed in fp32 from the 16-bit x0, z_l and x_l and kept only in 16 bits (the GEMM
// operand it already was), which halves the forward's element-wise bytes; the backward,
// its gradients and its fp32 x0 are unchanged.
//
// The backward (tunable/cross_net/cross_backward_schedule.h) keeps no running fp32 sums for
// up to four layers: each pass rebuilds the chain gradient of its layer's output as g plus
// the GEMM terms of the layers above, in their own buffers, and only the bottom pass forms
// the direct part of dL/dx0 from every layer's z; deeper nets checkpoint the chain
// gradient and the direct part in fp32 every kMaxCrossTerms layers.
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "gemm/cublaslt_gemm.h"
#include "tunable/cross_net/cross_net.h"
#include "model/gpu/dense_parameters.h"
#include "model/gpu/gpu_mlp.h"
#include "model/gpu/side_lane.h"

namespace hetrec::inline model::gpu_model {

class GpuCrossNet {
 public:
  GpuCrossNet(int width, int num_layers, int rank, const DenseParameters& params, int first_param,
              cublaslt::Precision precision);

  int num_layers() const { return static_cast<int>(layers_.size()); }
  // Whether the GEMMs run on 16-bit operands.
  bool half() const { return op_type_ != DType::f32; }
  DType operand_type() const { return op_type_; }
  // 16-bit mode: the consumer reads x_L only through output16(), so its fp32 copy is
  // neither stored nor written. Call before reserve().
  void set_output_16bit_only(bool only);
  // 16-bit mode: keep the residual stream x_1 .. x_L in 16 bits only (x_L also in fp32
  // unless set_output_16bit_only). Ignored in fp32 mode. Call before reserve().
  void set_residual_16bit(bool on);
  bool residual_16bit() const { return residual_16bit_; }
  // 16-bit mode with a width or rank that is not a multiple of 8: the GEMMs' precision on
  // their fp32 operands, tf32 (the default) or fp32 (model.unaligned_gemms). Ignored
  // otherwise.
  void set_unaligned_precision(cublaslt::Precision p) {
    if (unaligned_) precision_ = p;
  }

  void reserve(int64_t batch, Allocator& device);

  // Tuned variants of the element-wise passes (tunable/cross_net/cross_net_tuned.h) to run instead
  // of the built-in ones; null keeps the built-in one. Not owned; they must outlive this.
  void set_tuned(const kernels::TunedCrossForward* forward, const kernels::TunedCrossBackward* backward) {
    tuned_forward_ = forward;
    tuned_backward_ = backward;
  }

  // Run the weight-gradient GEMMs on `lane` beside the chain of input gradients (null:
  // all on the backward's stream). The GEMM object handed to backward() needs its side
  // lane. Not owned; it must outlive this.
  void set_side_lane(SideLane* lane) { side_ = lane; }

  // x0: batch x width, contiguous. Returns x_L in fp32 (owned, valid until the next
  // forward), or null when set_output_16bit_only(true) in 16-bit mode.
  const float* forward(cublaslt::Gemm& gemm, const float* x0, int64_t batch, gpu::stream_t stream);
  // 16-bit mode: x_L's 16-bit copy (batch x width), valid after forward; else null.
  const void* output16() const;
  // g: dL/dx_L (batch x width, contiguous; overwritten). Writes every parameter gradient
  // and dx0 (batch x width, contiguous), all complete in `stream`'s order on return.
  void backward(cublaslt::Gemm& gemm, const float* x0, float* g, float* dx0, int64_t batch, const Scratch& scratch,
                gpu::stream_t stream);

 private:
  struct Layer {
    const uint16_t *kernel16 = nullptr, *u16 = nullptr, *v16 = nullptr;  // 16-bit copies
    float *kernel = nullptr, *u = nullptr, *v = nullptr, *bias = nullptr;
    const uint16_t* bias16 = nullptr;
    float *grad_kernel = nullptr, *grad_u = nullptr, *grad_v = nullptr, *grad_bias = nullptr;
  };
  struct GemmCall {
    bool ta = false, tb = false;
    int64_t m = 0, n = 0, k = 0;
    const void* a = nullptr;
    int64_t lda = 0;
    const void* b = nullptr;
    int64_t ldb = 0;
    void* d = nullptr;
    int64_t ldd = 0;
    DType d_type = DType::f32;
    float beta = 0.0f;
    const void* bias = nullptr;  // of d_type
  };
  void gemm_run(cublaslt::Gemm& gemm, const GemmCall& c, gpu::stream_t stream,
                cublaslt::Gemm::Lane lane = cublaslt::Gemm::Lane::main) const;
  // A weight-gradient GEMM: on the side lane (after what `stream` holds so far, then
  // recording `mark`) when there is one, else on `stream`.
  void weight_gemm_run(cublaslt::Gemm& gemm, const GemmCall& c, gpu::stream_t stream, int mark) const;
  // The GEMM operand of a parameter: its 16-bit copy in 16-bit mode.
  const void* weight(const float* fp32, const uint16_t* copy) const {
    return half() ? static_cast<const void*>(copy) : static_cast<const void*>(fp32);
  }
  const float* x(int l, const float* x0) const { return l == 0 ? x0 : xs_[static_cast<std::size_t>(l - 1)].data<float>(); }
  // The GEMM operand of x_l: its 16-bit copy, or x_l itself in fp32.
  const void* x_operand(int l, const float* x0) const {
    return half() ? xs_op_[static_cast<std::size_t>(l)].raw() : static_cast<const void*>(x(l, x0));
  }

  int width_;
  int rank_;
  cublaslt::Precision precision_;
  DType op_type_ = DType::f32;  // the GEMM operand type: f32, or bf16 / f16 in 16-bit mode
  bool unaligned_ = false;      // 16-bit mode, but the widths keep fp32 operands
  bool output_16bit_only_ = false;
  bool residual_16bit_ = false;
  std::vector<Layer> layers_;
  int64_t capacity_ = 0;
  std::vector<Tensor> xs_;     // fp32 x_1 .. x_L (x_L left out when output_16bit_only_, the others with residual_16bit_)
  std::vector<Tensor> zs_;     // z_0 .. z_{L-1} in the operand type
  std::vector<Tensor> xs_op_;  // 16-bit: copies of x_0 .. x_L
  std::vector<Tensor> vxs_;    // low rank: V_l x_l in the operand type
  Tensor dz_, dvx_;            // operand type
  std::vector<Tensor> hs_;     // operand type: the layers' chain terms through their inputs (cross_backward_schedule.h)
  Tensor acc_;                 // fp32: the direct part of dL/dx0 at a checkpoint (only with more than 4 layers)
  const kernels::TunedCrossForward* tuned_forward_ = nullptr;
  const kernels::TunedCrossBackward* tuned_backward_ = nullptr;
  SideLane* side_ = nullptr;
};

}  // namespace hetrec::model::gpu_model
