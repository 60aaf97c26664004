#include "model/gpu/relu_mask_fusion.h"

#include <utility>

namespace hetrec::inline model::gpu_model {

ReluMaskFusion::ReluMaskFusion(std::vector<Layer> layers, DType half_type, cublaslt::Precision precision,
                               bool enabled)
    : layers_(std::move(layers)),
      half_type_(half_type),
      precision_(precision),
      enabled_(enabled),
      current_(layers_.size(), 0) {}

bool ReluMaskFusion::fusable(int i) const {
  const std::size_t li = static_cast<std::size_t>(i);
  return enabled_ && li + 1 < layers_.size() && layers_[li].relu && layers_[li].half && layers_[li + 1].half;
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

cublaslt::Problem ReluMaskFusion::backward_problem(int i, int64_t batch, int64_t ld_dz) const {
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
  b.epilogue = cublaslt::Epilogue::drelu_bgrad;
  // cuBLASLt fuses these with a 16-bit D only for a bias (and bias gradient) of D's type
  // (tests/gemm/test_cublaslt_gemm.cpp records the combinations): the bias gradient
  // arrives in 16 bits, as an autocast Linear's does, and is widened exactly.
  b.bias_type = half_type_;
  return b;
}

void ReluMaskFusion::choose(cublaslt::Gemm& gemm, int64_t batch) {
  auto it = by_batch_.find(batch);
  if (it == by_batch_.end()) {
    std::vector<char> fused(layers_.size(), 0);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      const int li = static_cast<int>(i);
      if (!fusable(li)) continue;
      fused[i] = gemm.supported(forward_problem(li, batch)) &&
                         gemm.supported(backward_problem(li, batch, layers_[i + 1].out))
                     ? 1
                     : 0;
    }
    it = by_batch_.emplace(batch, std::move(fused)).first;
  }
  current_ = it->second;
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
