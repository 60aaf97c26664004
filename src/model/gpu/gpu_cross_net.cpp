#include "model/gpu/gpu_cross_net.h"

#include "core/error.h"
#include "kernels/column_sum.h"
#include "kernels/convert.h"
#include "kernels/cross_net.h"

namespace hetrec::gpu_model {

GpuCrossNet::GpuCrossNet(int width, int num_layers, int rank, const DenseParameters& params, int first_param,
                         cublaslt::Precision precision)
    : width_(width), rank_(rank), precision_(precision) {
  const bool sixteen = precision == cublaslt::Precision::bf16 || precision == cublaslt::Precision::fp16;
  const bool eligible = width % kSixteenBitWidthMultiple == 0 && rank % kSixteenBitWidthMultiple == 0;
  if (sixteen && eligible) half_type_ = precision == cublaslt::Precision::fp16 ? DType::f16 : DType::bf16;
  if (sixteen && !eligible) precision_ = cublaslt::Precision::fp32;
  if (half() && num_layers > 0 && !params.value_16bit(first_param))
    throw InternalError("GpuCrossNet: 16-bit layers need the parameters' 16-bit copy");
  int p = first_param;
  for (int l = 0; l < num_layers; ++l) {
    Layer ly;
    if (rank_ > 0) {
      ly.u = params.value(p);
      ly.u16 = params.value_16bit(p);
      ly.grad_u = params.grad(p);
      ly.v = params.value(p + 1);
      ly.v16 = params.value_16bit(p + 1);
      ly.grad_v = params.grad(p + 1);
      p += 2;
    } else {
      ly.kernel = params.value(p);
      ly.kernel16 = params.value_16bit(p);
      ly.grad_kernel = params.grad(p);
      p += 1;
    }
    ly.bias = params.value(p);
    ly.grad_bias = params.grad(p);
    p += 1;
    layers_.push_back(ly);
  }
}

void GpuCrossNet::reserve(int64_t batch, Allocator& device) {
  if (batch <= capacity_) return;
  xs_.clear();
  zs_.clear();
  vxs_.clear();
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    xs_.push_back(Tensor::empty({batch, width_}, DType::f32, device));
    zs_.push_back(Tensor::empty({batch, width_}, DType::f32, device));
    if (rank_ > 0) vxs_.push_back(Tensor::empty({batch, rank_}, DType::f32, device));
  }
  dz_ = Tensor::empty({batch, width_}, DType::f32, device);
  dx0_acc_ = Tensor::empty({batch, width_}, DType::f32, device);
  if (rank_ > 0) dvx_ = Tensor::empty({batch, rank_}, DType::f32, device);
  xs16_.clear();
  vxs16_.clear();
  if (half()) {
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      xs16_.push_back(Tensor::empty({batch, width_}, half_type_, device));
      if (rank_ > 0) vxs16_.push_back(Tensor::empty({batch, rank_}, half_type_, device));
    }
    dz16_ = Tensor::empty({batch, width_}, half_type_, device);
    if (rank_ > 0) dvx16_ = Tensor::empty({batch, rank_}, half_type_, device);
  }
  capacity_ = batch;
}

const void* GpuCrossNet::operand(const float* m, int64_t batch, int64_t cols, const Tensor& copy,
                                 gpu::stream_t stream) const {
  if (!half()) return m;
  kernels::f32_to_16bit_matrix(m, cols, copy.data<uint16_t>(), cols, batch, cols, half_type_, stream);
  return copy.raw();
}

void GpuCrossNet::gemm_run(cublaslt::Gemm& gemm, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void* a,
                           int64_t lda, const void* b, int64_t ldb, float* d, int64_t ldd, float beta,
                           const float* bias, gpu::stream_t stream) const {
  cublaslt::Problem p;
  p.trans_a = ta;
  p.trans_b = tb;
  p.m = m;
  p.n = n;
  p.k = k;
  p.lda = lda;
  p.ldb = ldb;
  p.ldd = ldd;
  p.precision = precision_;
  p.epilogue = bias ? cublaslt::Epilogue::bias : cublaslt::Epilogue::none;
  cublaslt::Operands o;
  o.a = a;
  o.b = b;
  o.d = d;
  o.beta = beta;
  o.bias = bias;
  gemm.run(p, o, stream);
}

const float* GpuCrossNet::forward(cublaslt::Gemm& gemm, const float* x0, int64_t batch, gpu::stream_t stream) {
  HETREC_CHECK(batch <= capacity_, "GpuCrossNet::forward beyond the reserved batch");
  const int64_t n = width_;
  const int64_t r = rank_;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const Layer& ly = layers_[l];
    const float* xl = x(static_cast<int>(l), x0);
    float* z = zs_[l].data<float>();
    const void* xl_op = operand(xl, batch, n, half() ? xs16_[l] : Tensor(), stream);
    if (rank_ > 0) {
      float* vx = vxs_[l].data<float>();
      gemm_run(gemm, false, true, batch, r, n, xl_op, n, weight(ly.v, ly.v16), n, vx, r, 0.0f, nullptr,
               stream);  // vx = x V^T
      const void* vx_op = operand(vx, batch, r, half() ? vxs16_[l] : Tensor(), stream);
      gemm_run(gemm, false, true, batch, n, r, vx_op, r, weight(ly.u, ly.u16), r, z, n, 0.0f, ly.bias,
               stream);  // z = vx U^T + b
    } else {
      gemm_run(gemm, false, true, batch, n, n, xl_op, n, weight(ly.kernel, ly.kernel16), n, z, n, 0.0f, ly.bias,
               stream);  // z = x W^T + b
    }
    kernels::cross_forward({batch, n}, x0, n, xl, n, z, xs_[l].data<float>(), n, stream);
  }
  return layers_.empty() ? x0 : xs_.back().data<float>();
}

void GpuCrossNet::backward(cublaslt::Gemm& gemm, const float* x0, float* g, float* dx0, int64_t batch,
                           const Scratch& scratch, gpu::stream_t stream) {
  const int64_t n = width_;
  const int64_t r = rank_;
  float* dz = dz_.data<float>();
  float* acc = dx0_acc_.data<float>();
  for (int l = static_cast<int>(layers_.size()) - 1; l >= 0; --l) {
    const Layer& ly = layers_[static_cast<std::size_t>(l)];
    const float* xl = x(l, x0);
    const float* z = zs_[static_cast<std::size_t>(l)].data<float>();
    // dz = g * x0; the direct part of dL/dx0 (g * z) accumulates over the layers.
    kernels::cross_backward({batch, n}, g, n, x0, n, z, dz, acc, n, /*accumulate=*/l + 1 < num_layers(), stream);
    kernels::column_sum(dz, batch, n, n, ly.grad_bias, scratch.data, scratch.bytes, stream);
    // The forward's operand copies of x_l and V x_l are still valid.
    const void* xl_op = half() ? xs16_[static_cast<std::size_t>(l)].raw() : static_cast<const void*>(xl);
    const void* dz_op = operand(dz, batch, n, dz16_, stream);
    if (rank_ > 0) {
      const void* vx_op = half() ? vxs16_[static_cast<std::size_t>(l)].raw()
                                : static_cast<const void*>(vxs_[static_cast<std::size_t>(l)].data<float>());
      float* dvx = dvx_.data<float>();
      gemm_run(gemm, true, false, n, r, batch, dz_op, n, vx_op, r, ly.grad_u, r, 0.0f, nullptr, stream);  // dU = dz^T vx
      gemm_run(gemm, false, false, batch, r, n, dz_op, n, weight(ly.u, ly.u16), r, dvx, r, 0.0f, nullptr,
               stream);  // dvx = dz U
      const void* dvx_op = operand(dvx, batch, r, dvx16_, stream);
      gemm_run(gemm, true, false, r, n, batch, dvx_op, r, xl_op, n, ly.grad_v, n, 0.0f, nullptr, stream);  // dV = dvx^T x
      gemm_run(gemm, false, false, batch, n, r, dvx_op, r, weight(ly.v, ly.v16), n, g, n, 1.0f, nullptr,
               stream);  // g += dvx V
    } else {
      gemm_run(gemm, true, false, n, n, batch, dz_op, n, xl_op, n, ly.grad_kernel, n, 0.0f, nullptr, stream);  // dW = dz^T x
      gemm_run(gemm, false, false, batch, n, n, dz_op, n, weight(ly.kernel, ly.kernel16), n, g, n, 1.0f, nullptr,
               stream);  // g += dz W
    }
  }
  // g now holds the gradient through the chain x_0 -> x_1 -> ...; add the direct terms.
  if (layers_.empty()) {
    kernels::add_matrices({batch, n}, g, n, nullptr, 0, dx0, n, stream);
  } else {
    kernels::add_matrices({batch, n}, g, n, acc, n, dx0, n, stream);
  }
}

}  // namespace hetrec::gpu_model
