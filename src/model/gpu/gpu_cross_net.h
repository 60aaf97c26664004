#pragma once
// DCNv2 cross network on the device: x_{l+1} = x0 * (W_l x_l + b_l) + x_l, full rank or
// low rank (W_l = U_l V_l), with the GEMMs (bias fused) on cuBLASLt and the element-wise
// parts in kernels/cross_net.h. Parameters live in a DenseParameters buffer in the CPU
// CrossNet's order: per layer the kernel (or U, then V), then the bias.
//
// bf16 or fp16 precision (width and rank multiples of 8): every GEMM reads 16-bit
// operands (copies of x_l, V x_l, dz and d(V x) made by kernels/convert.h, and the
// parameters' 16-bit copy) and accumulates in fp32; x_l, z_l, V x_l, the element-wise
// kernels and all gradients stay fp32.
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "gemm/cublaslt_gemm.h"
#include "model/gpu/dense_parameters.h"
#include "model/gpu/gpu_mlp.h"

namespace hetrec::gpu_model {

class GpuCrossNet {
 public:
  GpuCrossNet(int width, int num_layers, int rank, const DenseParameters& params, int first_param,
              cublaslt::Precision precision);

  int num_layers() const { return static_cast<int>(layers_.size()); }
  void reserve(int64_t batch, Allocator& device);

  // x0: batch x width, contiguous. Returns x_L (owned, valid until the next forward).
  const float* forward(cublaslt::Gemm& gemm, const float* x0, int64_t batch, gpu::stream_t stream);
  // g: dL/dx_L (batch x width, contiguous; overwritten). Writes every parameter gradient
  // and dx0 (batch x width, contiguous).
  void backward(cublaslt::Gemm& gemm, const float* x0, float* g, float* dx0, int64_t batch, const Scratch& scratch,
                gpu::stream_t stream);

  // Whether the GEMMs run on 16-bit operands.
  bool half() const { return half_type_ != DType::f32; }

 private:
  struct Layer {
    const uint16_t *kernel16 = nullptr, *u16 = nullptr, *v16 = nullptr;  // 16-bit copies
    float *kernel = nullptr, *u = nullptr, *v = nullptr, *bias = nullptr;
    float *grad_kernel = nullptr, *grad_u = nullptr, *grad_v = nullptr, *grad_bias = nullptr;
  };
  void gemm_run(cublaslt::Gemm& gemm, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                const void* b, int64_t ldb, float* d, int64_t ldd, float beta, const float* bias,
                gpu::stream_t stream) const;
  // 16-bit: a 16-bit copy of the batch x cols matrix m (contiguous) into `copy`; returns
  // the GEMM operand (the copy, or m itself in fp32).
  const void* operand(const float* m, int64_t batch, int64_t cols, const Tensor& copy, gpu::stream_t stream) const;
  // The GEMM operand of a parameter: its 16-bit copy in 16-bit mode.
  const void* weight(const float* fp32, const uint16_t* copy) const {
    return half() ? static_cast<const void*>(copy) : static_cast<const void*>(fp32);
  }
  const float* x(int l, const float* x0) const { return l == 0 ? x0 : xs_[static_cast<std::size_t>(l - 1)].data<float>(); }

  int width_;
  int rank_;
  cublaslt::Precision precision_;
  DType half_type_ = DType::f32;  // bf16 or f16 when the GEMMs run in 16 bits
  std::vector<Layer> layers_;
  int64_t capacity_ = 0;
  std::vector<Tensor> xs_;   // x_1 .. x_L
  std::vector<Tensor> zs_;   // z_0 .. z_{L-1}
  std::vector<Tensor> vxs_;  // low rank: V_l x_l
  Tensor dz_, dvx_, dx0_acc_;
  std::vector<Tensor> xs16_;   // 16-bit: copies of x_0 .. x_{L-1}
  std::vector<Tensor> vxs16_;  // 16-bit, low rank: copies of V_l x_l
  Tensor dz16_, dvx16_;
};

}  // namespace hetrec::gpu_model
