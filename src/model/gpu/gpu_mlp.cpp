#include "model/gpu/gpu_mlp.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/column_sum.h"
#include "kernels/convert.h"
#include "kernels/relu_mask.h"

namespace hetrec::inline model::gpu_model {

GpuMlp::GpuMlp(int in_features, std::vector<int> widths, bool relu_last, const DenseParameters& params,
               int first_param, cublaslt::Precision precision, bool input_16bit, ReluBackward relu_backward)
    : in_(in_features), widths_(std::move(widths)), precision_(precision), input_16bit_(input_16bit) {
  if (precision == cublaslt::Precision::bf16) half_type_ = DType::bf16;
  if (precision == cublaslt::Precision::fp16) half_type_ = DType::f16;
  int in = in_features;
  for (std::size_t i = 0; i < widths_.size(); ++i) {
    Layer l;
    l.in = in;
    l.out = widths_[i];
    l.relu = i + 1 < widths_.size() || relu_last;
    const int w = first_param + 2 * static_cast<int>(i);
    l.half = half_type_ != DType::f32 && sixteen_bit_widths(l.in, l.out);
    if (l.half) {
      l.weight16 = params.value_16bit(w);
      if (!l.weight16) throw InternalError("GpuMlp: 16-bit layers need the parameters' 16-bit copy");
    }
    l.weight = params.value(w);
    l.bias = params.value(w + 1);
    l.bias16 = params.value_16bit(w + 1);
    l.grad_weight = params.grad(w);
    l.grad_bias = params.grad(w + 1);
    layers_.push_back(l);
    in = l.out;
  }
  // A 16-bit layer whose successor is 16-bit too hands it its output in 16 bits only.
  for (std::size_t i = 0; i + 1 < layers_.size(); ++i) layers_[i].out16 = layers_[i].half && layers_[i + 1].half;
  std::vector<ReluMaskFusion::Layer> fusion_layers;
  for (const Layer& l : layers_) fusion_layers.push_back({l.in, l.out, l.relu, l.half});
  fusion_ = ReluMaskFusion(std::move(fusion_layers), half_type_, precision_, relu_backward);
  operands16_.assign(layers_.size(), nullptr);
}

void GpuMlp::use_small_gemms(std::vector<SmallGemmUse> uses) {
  for (const SmallGemmUse& u : uses) {
    const Layer& l = layers_.at(static_cast<std::size_t>(u.layer));
    if (l.half) throw InternalError("GpuMlp: a small-GEMM kernel for a 16-bit layer");
  }
  small_gemms_.set_uses(std::move(uses));
  capacity_ = 0;  // the next reserve() sizes the workspace
}

std::vector<SmallGemmDecision> GpuMlp::small_gemm_decisions(const std::string& prefix) const {
  return small_gemms_.decisions(prefix);
}

int GpuMlp::max_width() const {
  int m = in_;
  for (int w : widths_) m = std::max(m, w);
  return m;
}

void GpuMlp::reserve(int64_t batch, Allocator& device) {
  if (batch <= capacity_) return;
  activations_.clear();
  for (const Layer& l : layers_)
    activations_.push_back(Tensor::empty({batch, l.out}, l.out16 ? half_type_ : DType::f32, device));
  for (Tensor& g : grad_buffers_) g = Tensor::empty({batch, max_width()}, DType::f32, device);
  inputs16_.clear();
  bool any_half = false;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    // A 16-bit layer rounds its own input unless the caller or the previous layer hands
    // it over in 16 bits.
    const bool handed = i == 0 ? input_16bit_ : layers_[i - 1].out16;
    inputs16_.push_back(l.half && !handed ? Tensor::empty({batch, l.in}, half_type_, device) : Tensor());
    any_half = any_half || l.half;
  }
  for (Tensor& g16 : grad16_) g16 = any_half ? Tensor::empty({batch, max_width()}, half_type_, device) : Tensor();
  bias_grad16_ = any_half ? Tensor::empty({max_width()}, half_type_, device) : Tensor();
  fusion_.reserve(batch, device);
  small_gemms_.reserve(device);
  capacity_ = batch;
}

float* GpuMlp::forward(cublaslt::Gemm& gemm, const float* x, int64_t ldx, int64_t batch, float* out, int64_t ld_out,
                       gpu::stream_t stream, const void* x16) {
  HETREC_CHECK(batch <= capacity_, "GpuMlp::forward beyond the reserved batch");
  if (input_16bit_ && !layers_.empty() && layers_[0].half && !x16)
    throw InternalError("GpuMlp::forward: the input's 16-bit copy is missing");
  const float* input = x;
  int64_t ld_in = ldx;
  const void* input16 = input_16bit_ ? x16 : nullptr;  // the input's 16-bit copy when one exists
  fusion_.choose(gemm, batch);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    const bool last = i + 1 == layers_.size();
    void* y = last && out ? static_cast<void*>(out) : activations_[i].raw();
    const int64_t ld_y = last && out ? ld_out : l.out;
    cublaslt::Problem p;
    p.m = batch;
    p.n = l.out;
    p.k = l.in;
    p.trans_b = true;  // y = x W^T, W stored out x in
    p.lda = ld_in;
    p.ldb = l.in;
    p.ldd = ld_y;
    p.d_type = l.out16 ? half_type_ : DType::f32;
    p.precision = l.half ? precision_ : fp32_precision();
    p.epilogue = fusion_.stores_mask(static_cast<int>(i)) ? cublaslt::Epilogue::relu_aux_bias
                 : l.relu  ? cublaslt::Epilogue::relu_bias
                           : cublaslt::Epilogue::bias;
    cublaslt::Operands o;
    o.a = input;
    o.b = l.weight;
    if (l.half) {
      if (!input16) {
        uint16_t* in16 = inputs16_[i].data<uint16_t>();
        kernels::f32_to_16bit_matrix(input, ld_in, in16, l.in, batch, l.in, half_type_, stream);
        input16 = in16;
      }
      operands16_[i] = input16;
      o.a = input16;
      o.b = l.weight16;
      p.lda = l.in;
    }
    o.d = y;
    o.bias = l.bias;
    if (fusion_.stores_mask(static_cast<int>(i))) o.aux = fusion_.mask(static_cast<int>(i));
    if (l.out16) {
      // A 16-bit output adds the bias's 16-bit copy, as an autocast Linear does.
      p.bias_type = half_type_;
      o.bias = l.bias16;
    }
    // An fp32 layer's kernel (16-bit layers have none): fp32 output, fp32 bias.
    const SmallGemmChoice::Launches fwd{
        stream,
        [&](const kernels::TunedSmallGemm& k) {
          k.launch({batch, o.a, p.lda, o.b, p.ldb, static_cast<float*>(y), p.ldd, l.bias, nullptr}, stream);
        },
        [&] { gemm.run(p, o, stream); }};
    if (const kernels::TunedSmallGemm* k =
            small_gemms_.choose(static_cast<int>(i), tune::SmallGemmPass::forward, batch, gemm, p, o, fwd))
      fwd.small(*k);
    else
      fwd.cublaslt();
    input = l.out16 ? nullptr : static_cast<const float*>(y);
    input16 = l.out16 ? y : nullptr;
    ld_in = ld_y;
    if (last) {
      last_output_ = static_cast<float*>(y);
      last_ld_ = ld_y;
    }
  }
  return last_output_;
}

void GpuMlp::backward(cublaslt::Gemm& gemm, const float* x, int64_t ldx, float* dy, int64_t ld_dy, float* dx,
                      int64_t ldx_grad, int64_t batch, const Scratch& scratch, gpu::stream_t stream) {
  float* grad = dy;
  int64_t ld_grad = ld_dy;
  int pingpong = 0;
  int g16 = 0;             // the grad16_ buffer that holds the current layer's 16-bit dz
  bool dz_ready = false;   // the layer above's input-gradient GEMM wrote dz (and the bias gradient unless split)
  // With a side lane, layer i's weight-gradient GEMM runs there and records mark i % 2;
  // the main stream waits for it before anything of layer i - 1 that writes a gradient
  // buffer (one of which still holds layer i's dz).
  bool above_on_side = false;
  const auto wait_for_above = [&](int i) {
    if (above_on_side) side_->wait(stream, (i + 1) % 2);
    above_on_side = false;
  };
  for (int i = static_cast<int>(layers_.size()) - 1; i >= 0; --i) {
    const std::size_t li = static_cast<std::size_t>(i);
    const Layer& l = layers_[li];
    const bool last = i + 1 == static_cast<int>(layers_.size());
    void* y = last ? static_cast<void*>(last_output_) : activations_[li].raw();
    const int64_t ld_y = last ? last_ld_ : l.out;
    // An fp32 layer's input (a 16-bit layer reads its forward operand instead).
    const float* input = i == 0 ? x : (layers_[li - 1].out16 ? nullptr : activations_[li - 1].data<float>());
    const int64_t ld_in = i == 0 ? ldx : layers_[li - 1].out;

    // dz = dy * relu'(y) and the bias gradient sum_b dz: written in place for an fp32
    // layer, straight into the 16-bit operand for a 16-bit one.
    void* dz_operand = grad;
    int64_t ld_dz = ld_grad;
    if (l.half) {
      dz_operand = grad16_[g16].raw();
      ld_dz = l.out;
    }
    if (!dz_ready) wait_for_above(i);  // the pass below may write the buffer of the layer above's dz
    if (dz_ready) {
      // Done by the epilogue of the layer above's input-gradient GEMM.
    } else if (l.relu) {
      const kernels::TypedMatrix y_in{y, l.out16 ? half_type_ : DType::f32, ld_y};
      const kernels::TypedMatrix dz_out{dz_operand, l.half ? half_type_ : DType::f32, ld_dz};
      kernels::relu_backward_column_sum(grad, ld_grad, y_in, dz_out, batch, l.out, l.grad_bias, scratch.data,
                                        scratch.bytes, stream);
    } else {
      kernels::column_sum(grad, batch, l.out, ld_grad, l.grad_bias, scratch.data, scratch.bytes, stream);
      if (l.half)
        kernels::f32_to_16bit_matrix(grad, ld_grad, grad16_[g16].data<uint16_t>(), l.out, batch, l.out, half_type_,
                                     stream);
    }

    // The weight GEMM reads the layer's input: the forward's 16-bit operand for a 16-bit layer.
    const void* in_operand = l.half ? operands16_[li] : static_cast<const void*>(input);
    const int64_t ld_in_operand = l.half ? l.in : ld_in;
    const cublaslt::Precision precision = l.half ? precision_ : fp32_precision();

    // dW (out x in) = dz^T x; with split or mask_pass, and the bias gradient sum_b dz.
    const bool bias_in_weight_gemm = dz_ready && fusion_.bias_in_weight_gemm(i);
    cublaslt::Problem pw;
    pw.trans_a = true;
    pw.m = l.out;
    pw.n = l.in;
    pw.k = batch;
    pw.lda = ld_dz;
    pw.ldb = ld_in_operand;
    pw.ldd = l.in;
    pw.precision = precision;
    cublaslt::Operands ow;
    ow.a = dz_operand;
    ow.b = in_operand;
    ow.d = l.grad_weight;
    if (bias_in_weight_gemm) {
      pw = fusion_.weight_gradient_problem(i, batch);  // the problem whose support chose the fusion
      HETREC_CHECK(pw.lda == ld_dz && pw.ldb == ld_in_operand && pw.precision == precision,
                   "GpuMlp: the bias-summing weight GEMM is not the layer's");
      ow.bias_grad = l.grad_bias;
    }
    const gpu::stream_t weight_stream = side_ ? side_->stream() : stream;
    if (side_) side_->fork(stream);
    const SmallGemmChoice::Launches dw{
        weight_stream,
        [&](const kernels::TunedSmallGemm& k) {
          // C = dZ^T X: the narrow operand is dZ when the layer's output is the small side.
          const bool dz_narrow = k.shape().flag;
          k.launch({batch, dz_narrow ? ow.a : ow.b, dz_narrow ? pw.lda : pw.ldb, dz_narrow ? ow.b : ow.a,
                    dz_narrow ? pw.ldb : pw.lda, l.grad_weight, pw.ldd, nullptr, small_gemms_.workspace()},
                   weight_stream);
        },
        [&] { gemm.run(pw, ow, weight_stream, side_ ? cublaslt::Gemm::Lane::side : cublaslt::Gemm::Lane::main); }};
    if (const kernels::TunedSmallGemm* k =
            bias_in_weight_gemm ? nullptr
                                : small_gemms_.choose(i, tune::SmallGemmPass::weight_gradient, batch, gemm, pw, ow, dw))
      dw.small(*k);
    else
      dw.cublaslt();
    // The input-gradient GEMM below overwrites the gradient buffer the layer above's
    // weight gradient reads.
    wait_for_above(i);
    if (side_) {
      side_->mark(i % 2);
      above_on_side = true;
    }

    // dx (batch x in) = dz W; where layer i - 1's ReLU backward fuses, its 16-bit dz =
    // dx * relu' instead: by the epilogue (the forward's mask bits), with its bias gradient
    // unless split, or by the 16-bit mask pass after a plain GEMM (mask_pass).
    if (i > 0 && fusion_.fused(i - 1)) {
      const Layer& below = layers_[li - 1];
      const cublaslt::Epilogue epilogue = fusion_.backward_epilogue(i - 1);
      const cublaslt::Problem px = fusion_.backward_problem(i - 1, batch, ld_dz, epilogue);
      cublaslt::Operands ox;
      ox.a = dz_operand;
      ox.b = l.weight16;
      ox.d = grad16_[g16 ^ 1].raw();
      if (epilogue != cublaslt::Epilogue::none) ox.aux = fusion_.mask(i - 1);
      const bool bias_here = epilogue == cublaslt::Epilogue::drelu_bgrad;
      if (bias_here) ox.bias_grad = static_cast<float*>(bias_grad16_.raw());  // 16-bit values (px.bias_type)
      gemm.run(px, ox, stream);
      if (bias_here) kernels::widen_16bit(bias_grad16_.data<uint16_t>(), below.grad_bias, below.out, half_type_, stream);
      if (epilogue == cublaslt::Epilogue::none)
        kernels::relu_mask_16bit(grad16_[g16 ^ 1].data<uint16_t>(), px.ldd, activations_[li - 1].data<uint16_t>(),
                                 below.out, batch, below.out, half_type_, stream);
      g16 ^= 1;
      dz_ready = true;
      grad = nullptr;
      ld_grad = 0;
      continue;
    }
    dz_ready = false;
    float* next = nullptr;
    int64_t ld_next = 0;
    if (i > 0) {
      next = grad_buffers_[pingpong].data<float>();
      ld_next = l.in;
      pingpong ^= 1;
    } else if (dx) {
      next = dx;
      ld_next = ldx_grad;
    }
    if (next) {
      cublaslt::Problem px;
      px.m = batch;
      px.n = l.in;
      px.k = l.out;
      px.lda = ld_dz;
      px.ldb = l.in;
      px.ldd = ld_next;
      px.precision = precision;
      cublaslt::Operands ox;
      ox.a = dz_operand;
      ox.b = l.half ? static_cast<const void*>(l.weight16) : l.weight;
      ox.d = next;
      const SmallGemmChoice::Launches dx_launches{
          stream,
          [&](const kernels::TunedSmallGemm& k) {
            k.launch({batch, ox.a, px.lda, ox.b, px.ldb, next, px.ldd, nullptr, nullptr}, stream);
          },
          [&] { gemm.run(px, ox, stream); }};
      if (const kernels::TunedSmallGemm* k =
              small_gemms_.choose(i, tune::SmallGemmPass::input_gradient, batch, gemm, px, ox, dx_launches))
        dx_launches.small(*k);
      else
        dx_launches.cublaslt();
    }
    grad = next;
    ld_grad = ld_next;
  }
  if (side_) side_->join(stream);
}

}  // namespace hetrec::model::gpu_model
