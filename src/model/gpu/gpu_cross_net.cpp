#include "model/gpu/gpu_cross_net.h"

#include "core/error.h"
#include "gpu/memory.h"
#include "kernels/convert.h"
#include "tunable/cross_net/cross_net.h"

namespace hetrec::inline model::gpu_model {

GpuCrossNet::GpuCrossNet(int width, int num_layers, int rank, const DenseParameters& params, int first_param,
                         cublaslt::Precision precision)
    : width_(width), rank_(rank), precision_(precision) {
  const bool sixteen = precision == cublaslt::Precision::bf16 || precision == cublaslt::Precision::fp16;
  const bool eligible = sixteen_bit_widths(width, rank);
  if (sixteen && eligible) op_type_ = precision == cublaslt::Precision::fp16 ? DType::f16 : DType::bf16;
  unaligned_ = sixteen && !eligible;
  if (unaligned_) precision_ = cublaslt::Precision::tf32;  // set_unaligned_precision may change it
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
    ly.bias16 = params.value_16bit(p);
    ly.grad_bias = params.grad(p);
    p += 1;
    layers_.push_back(ly);
  }
}

void GpuCrossNet::set_output_16bit_only(bool only) {
  if (capacity_ > 0) throw InternalError("GpuCrossNet::set_output_16bit_only after reserve");
  output_16bit_only_ = only && half();
}

void GpuCrossNet::set_residual_16bit(bool on) {
  if (capacity_ > 0) throw InternalError("GpuCrossNet::set_residual_16bit after reserve");
  residual_16bit_ = on && half();
}

void GpuCrossNet::reserve(int64_t batch, Allocator& device) {
  if (batch <= capacity_) return;
  const std::size_t layers = layers_.size();
  xs_.clear();
  zs_.clear();
  xs_op_.clear();
  vxs_.clear();
  for (std::size_t l = 0; l < layers; ++l) {
    const bool last = l + 1 == layers;
    const bool fp32_copy = last ? !output_16bit_only_ : !residual_16bit_;
    xs_.push_back(fp32_copy ? Tensor::empty({batch, width_}, DType::f32, device) : Tensor());
    zs_.push_back(Tensor::empty({batch, width_}, op_type_, device));
    if (rank_ > 0) vxs_.push_back(Tensor::empty({batch, rank_}, op_type_, device));
  }
  if (half())
    for (std::size_t l = 0; l <= layers; ++l) xs_op_.push_back(Tensor::empty({batch, width_}, op_type_, device));
  dz_ = Tensor::empty({batch, width_}, op_type_, device);
  if (rank_ > 0) dvx_ = Tensor::empty({batch, rank_}, op_type_, device);
  const int num = static_cast<int>(layers);
  hs_.clear();
  for (int i = 0; i < kernels::cross_backward_term_buffers(num); ++i)
    hs_.push_back(Tensor::empty({batch, width_}, op_type_, device));
  acc_ = kernels::cross_backward_uses_accumulator(num) ? Tensor::empty({batch, width_}, DType::f32, device) : Tensor();
  capacity_ = batch;
}

void GpuCrossNet::weight_gemm_run(cublaslt::Gemm& gemm, const GemmCall& c, gpu::stream_t stream, int mark) const {
  if (!side_) {
    gemm_run(gemm, c, stream);
    return;
  }
  side_->fork(stream);
  gemm_run(gemm, c, side_->stream(), cublaslt::Gemm::Lane::side);
  side_->mark(mark);
}

void GpuCrossNet::gemm_run(cublaslt::Gemm& gemm, const GemmCall& c, gpu::stream_t stream,
                           cublaslt::Gemm::Lane lane) const {
  cublaslt::Problem p;
  p.trans_a = c.ta;
  p.trans_b = c.tb;
  p.m = c.m;
  p.n = c.n;
  p.k = c.k;
  p.lda = c.lda;
  p.ldb = c.ldb;
  p.ldd = c.ldd;
  p.d_type = c.d_type;
  p.precision = precision_;
  p.epilogue = c.bias ? cublaslt::Epilogue::bias : cublaslt::Epilogue::none;
  p.bias_type = c.d_type;
  cublaslt::Operands o;
  o.a = c.a;
  o.b = c.b;
  o.d = c.d;
  o.beta = c.beta;
  o.bias = c.bias;
  gemm.run(p, o, stream, lane);
}

const float* GpuCrossNet::forward(cublaslt::Gemm& gemm, const float* x0, int64_t batch, gpu::stream_t stream) {
  HETREC_CHECK(batch <= capacity_, "GpuCrossNet::forward beyond the reserved batch");
  const int64_t n = width_;
  const int64_t r = rank_;
  if (half() && !layers_.empty())
    kernels::f32_to_16bit_matrix(x0, n, xs_op_[0].data<uint16_t>(), n, batch, n, op_type_, stream);
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const Layer& ly = layers_[l];
    const int li = static_cast<int>(l);
    const void* xl_op = x_operand(li, x0);
    void* z = zs_[l].raw();
    const void* bias = half() ? static_cast<const void*>(ly.bias16) : static_cast<const void*>(ly.bias);
    if (rank_ > 0) {
      void* vx = vxs_[l].raw();
      // vx = x V^T and z = vx U^T + b, both in the operand type.
      gemm_run(gemm, {false, true, batch, r, n, xl_op, n, weight(ly.v, ly.v16), n, vx, r, op_type_, 0.0f, nullptr},
               stream);
      gemm_run(gemm, {false, true, batch, n, r, vx, r, weight(ly.u, ly.u16), r, z, n, op_type_, 0.0f, bias}, stream);
    } else {
      gemm_run(gemm, {false, true, batch, n, n, xl_op, n, weight(ly.kernel, ly.kernel16), n, z, n, op_type_, 0.0f, bias},
               stream);  // z = x W^T + b
    }
    float* out = xs_[l].defined() ? xs_[l].data<float>() : nullptr;
    void* out_op = half() ? xs_op_[l + 1].raw() : nullptr;
    if (residual_16bit_)
      kernels::cross_forward_16bit_stream({batch, n}, xs_op_[0].raw(), xl_op, z, out, out_op, op_type_, stream);
    else
      kernels::cross_forward({batch, n}, x0, x(li, x0), z, out, out_op, op_type_, stream, tuned_forward_);
  }
  if (layers_.empty()) return x0;
  return xs_.back().defined() ? xs_.back().data<float>() : nullptr;
}

const void* GpuCrossNet::output16() const {
  return half() && !xs_op_.empty() ? xs_op_.back().raw() : nullptr;
}

void GpuCrossNet::backward(cublaslt::Gemm& gemm, const float* x0, float* g, float* dx0, int64_t batch,
                           const Scratch& scratch, gpu::stream_t stream) {
  const int64_t n = width_;
  const int64_t r = rank_;
  const int num = num_layers();
  if (num == 0) {
    gpu::memcpy_async(dx0, g, static_cast<std::size_t>(batch * n) * sizeof(float), gpu::CopyKind::device_to_device,
                      stream);
    return;
  }
  void* dz = dz_.raw();
  // With a side lane, the weight gradient reading dz (dU, or dW at full rank) records mark
  // kDzRead and the one reading dvx (dV) mark kDvxRead; the next layer waits for each
  // before it overwrites that buffer, and for both at the end.
  constexpr int kDzRead = 0, kDvxRead = 1;
  for (const kernels::CrossBackwardPass& pass : kernels::cross_backward_schedule(num)) {
    const int l = pass.layer;
    const Layer& ly = layers_[static_cast<std::size_t>(l)];
    const bool bottom = pass.bottom;
    const bool above = l + 1 < num;
    if (side_ && above) side_->wait(stream, kDzRead);
    // G = g + the terms of the layers above since the last checkpoint; dz = G * x0 with
    // the bias gradient; the bottom pass (and a checkpoint) forms the direct part of dL/dx0
    // from the z's (cross_backward_schedule.h).
    kernels::CrossBackward args;
    args.g = g;
    args.terms = static_cast<int>(pass.terms.size());
    for (int s = 0; s < args.terms; ++s) args.h[s] = hs_[static_cast<std::size_t>(s)].raw();  // terms[s] is in buffer s
    args.x0 = x0;
    args.direct_terms = static_cast<int>(pass.direct.size());
    for (int j = 0; j < args.direct_terms; ++j)
      args.z[j] = zs_[static_cast<std::size_t>(pass.direct[static_cast<std::size_t>(j)])].raw();
    args.direct_first = pass.direct_first;
    args.acc = acc_.defined() ? acc_.data<float>() : nullptr;
    args.accumulate = pass.accumulate;
    args.checkpoint = pass.checkpoint;
    args.dx0 = bottom ? dx0 : nullptr;
    args.dz = dz;
    args.op_type = op_type_;
    args.bias_grad = ly.grad_bias;
    kernels::cross_backward({batch, n}, args, scratch.data, scratch.bytes, stream, tuned_backward_);

    // This layer's term through x_l goes to its buffer in the operand type (read by the
    // passes below) or, for the bottom layer, is added to dx0 in fp32.
    void* term = bottom ? static_cast<void*>(dx0) : hs_[static_cast<std::size_t>(pass.term_slot)].raw();
    const DType term_type = bottom ? DType::f32 : op_type_;
    const float term_beta = bottom ? 1.0f : 0.0f;
    const void* xl_op = x_operand(l, x0);
    if (rank_ > 0) {
      const void* vx = vxs_[static_cast<std::size_t>(l)].raw();
      void* dvx = dvx_.raw();
      weight_gemm_run(gemm, {true, false, n, r, batch, dz, n, vx, r, ly.grad_u, r, DType::f32, 0.0f, nullptr},
                      stream, kDzRead);  // dU = dz^T vx
      if (side_ && above) side_->wait(stream, kDvxRead);
      gemm_run(gemm, {false, false, batch, r, n, dz, n, weight(ly.u, ly.u16), r, dvx, r, op_type_, 0.0f, nullptr},
               stream);  // dvx = dz U, in the operand type
      weight_gemm_run(gemm, {true, false, r, n, batch, dvx, r, xl_op, n, ly.grad_v, n, DType::f32, 0.0f, nullptr},
                      stream, kDvxRead);  // dV = dvx^T x
      gemm_run(gemm,
               {false, false, batch, n, r, dvx, r, weight(ly.v, ly.v16), n, term, n, term_type, term_beta, nullptr},
               stream);  // term = dvx V
    } else {
      weight_gemm_run(gemm, {true, false, n, n, batch, dz, n, xl_op, n, ly.grad_kernel, n, DType::f32, 0.0f, nullptr},
                      stream, kDzRead);  // dW = dz^T x
      gemm_run(gemm, {false, false, batch, n, n, dz, n, weight(ly.kernel, ly.kernel16), n, term, n, term_type,
                      term_beta, nullptr},
               stream);  // term = dz W
    }
  }
  if (side_) side_->join(stream);
}

}  // namespace hetrec::model::gpu_model
