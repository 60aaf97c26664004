#include "model/gpu/relu_mask_fusion.h"

#include <string>
#include <utility>

#include "core/error.h"

namespace hetrec::inline model::gpu_model {

ReluMaskFusion::ReluMaskFusion(std::vector<Layer> layers, DType half_type, cublaslt::Precision precision,
                               ReluBackward mode)
    : layers_(std::move(layers)),
      half_type_(half_type),
      precision_(precision),
      mode_(mode),
      current_(layers_.size(), kNotFused) {}

bool ReluMaskFusion::fusable(int i) const {
  const std::size_t li = static_cast<std::size_t>(i);
  return mode_ != ReluBackward::pass && li + 1 < layers_.size() && layers_[li].relu && layers_[li].half &&
         layers_[li + 1].half;
}

cublaslt::Problem ReluMaskFusion::forward_problem(int i, int64_t batch) const {
  const Layer& l = layers_[static_cast<std::size_t>(i)];
  cublaslt::Problem f;
  f.m = batch;
  f.n = l.out;
  f.k = l.in;
  f.trans_b = true;
  f.lda = l.in;
  f.ldb = l.in;
  f.ldd = l.out;
  f.d_type = half_type_;
  f.precision = precision_;
  f.epilogue = cublaslt::Epilogue::relu_aux_bias;
  f.bias_type = half_type_;
  return f;
}

cublaslt::Problem ReluMaskFusion::backward_problem(int i, int64_t batch, int64_t ld_dz,
                                                   cublaslt::Epilogue epilogue) const {
  const Layer& l = layers_[static_cast<std::size_t>(i)];
  const Layer& next = layers_[static_cast<std::size_t>(i) + 1];
  cublaslt::Problem b;
  b.m = batch;
  b.n = next.in;
  b.k = next.out;
  b.lda = ld_dz;
  b.ldb = next.in;
  b.ldd = l.out;
  b.d_type = half_type_;
  b.precision = precision_;
  b.epilogue = epilogue;
  // cuBLASLt fuses these with a 16-bit D only for a bias (and bias gradient) of D's type
  // (tests/gemm/test_cublaslt_gemm.cpp records the combinations): the bias gradient
  // arrives in 16 bits, as an autocast Linear's does, and is widened exactly.
  if (epilogue == cublaslt::Epilogue::drelu_bgrad) b.bias_type = half_type_;
  return b;
}

cublaslt::Problem ReluMaskFusion::weight_gradient_problem(int i, int64_t batch) const {
  const Layer& l = layers_[static_cast<std::size_t>(i)];
  cublaslt::Problem w;
  w.trans_a = true;
  w.m = l.out;
  w.n = l.in;
  w.k = batch;
  w.lda = l.out;
  w.ldb = l.in;
  w.ldd = l.in;
  w.precision = precision_;
  w.epilogue = cublaslt::Epilogue::bgrad_a;  // fp32 D: the bias gradient in fp32
  return w;
}

void ReluMaskFusion::choose(cublaslt::Gemm& gemm, int64_t batch) {
  auto it = by_batch_.find(batch);
  if (it == by_batch_.end()) {
    std::vector<char> fused(layers_.size(), kNotFused);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      const int li = static_cast<int>(i);
      if (!fusable(li)) continue;
      const int64_t ld_dz = layers_[i + 1].out;
      const bool weight_sums = gemm.supported(weight_gradient_problem(li, batch));
      const bool mask_bits = gemm.supported(forward_problem(li, batch));  // the mask pass needs none
      if (mode_ == ReluBackward::mask_pass && weight_sums &&
          gemm.supported(backward_problem(li, batch, ld_dz, cublaslt::Epilogue::none)))
        fused[i] = kMaskPass;
      else if (!mask_bits)
        continue;
      else if (mode_ == ReluBackward::split && weight_sums &&
               gemm.supported(backward_problem(li, batch, ld_dz, cublaslt::Epilogue::drelu)))
        fused[i] = kSplit;
      else if (gemm.supported(backward_problem(li, batch, ld_dz, cublaslt::Epilogue::drelu_bgrad)))
        fused[i] = kInputGradient;
    }
    it = by_batch_.emplace(batch, std::move(fused)).first;
  }
  current_ = it->second;
}

cublaslt::Epilogue ReluMaskFusion::backward_epilogue(int i) const {
  switch (current_.at(static_cast<std::size_t>(i))) {
    case kSplit:
      return cublaslt::Epilogue::drelu;
    case kMaskPass:
      return cublaslt::Epilogue::none;
    case kInputGradient:
      return cublaslt::Epilogue::drelu_bgrad;
    default:
      throw InternalError("ReluMaskFusion: layer " + std::to_string(i) + " does not fuse");
  }
}

void ReluMaskFusion::reserve(int64_t batch, Allocator& device) {
  masks_.clear();
  for (std::size_t i = 0; i < layers_.size(); ++i)
    masks_.push_back(fusable(static_cast<int>(i))
                         ? Tensor::empty({static_cast<int64_t>(cublaslt::relu_aux_bytes(batch, layers_[i].out))},
                                         DType::u8, device)
                         : Tensor());
}

}  // namespace hetrec::model::gpu_model
