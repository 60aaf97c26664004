#pragma once
// DCNv2 cross network on the device: x_{l+1} = x0 * (W_l x_l + b_l) + x_l, full rank or
// low rank (W_l = U_l V_l), with the GEMMs (bias fused) on cuBLASLt and the element-wise
// parts in kernels/cross_net.h. Parameters live in a DenseParameters buffer in the CPU
// CrossNet's order: per layer the kernel (or U, then V), then the bias.
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

 private:
  struct Layer {
    float *kernel = nullptr, *u = nullptr, *v = nullptr, *bias = nullptr;
    float *grad_kernel = nullptr, *grad_u = nullptr, *grad_v = nullptr, *grad_bias = nullptr;
  };
  void gemm_run(cublaslt::Gemm& gemm, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                const float* b, int64_t ldb, float* d, int64_t ldd, float beta, const float* bias,
                gpu::stream_t stream) const;
  const float* x(int l, const float* x0) const { return l == 0 ? x0 : xs_[static_cast<std::size_t>(l - 1)].data<float>(); }

  int width_;
  int rank_;
  cublaslt::Precision precision_;
  std::vector<Layer> layers_;
  int64_t capacity_ = 0;
  std::vector<Tensor> xs_;   // x_1 .. x_L
  std::vector<Tensor> zs_;   // z_0 .. z_{L-1}
  std::vector<Tensor> vxs_;  // low rank: V_l x_l
  Tensor dz_, dvx_, dx0_acc_;
};

}  // namespace hetrec::gpu_model
