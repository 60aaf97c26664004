#pragma once
// A fully connected layer y = x W^T + b over a batch, CPU, with its backward. Parameter
// layout as PyTorch's nn.Linear: weight out x in, bias out.
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "optim/dense_param.h"

namespace hetrec::inline nn {

template <class T>
class Linear {
 public:
  // Parameters and gradients are allocated zeroed; call init() for the DLRM initialisation.
  Linear(int in_features, int out_features);

  int in_features() const { return in_; }
  int out_features() const { return out_; }

  // DLRM reference initialisation: weight ~ N(0, sqrt(2 / (in + out))), bias ~
  // N(0, sqrt(1 / out)), drawn weight-first in row-major order from Rng(seed, stream).
  void init(uint64_t seed, uint64_t stream);

  // x: batch x in, y: batch x out (overwritten).
  void forward(const T* x, int64_t batch, T* y) const;
  // dy: batch x out, the gradient of the loss w.r.t. y for the x given to forward().
  // Overwrites the weight and bias gradients, and writes dx (batch x in) unless null.
  void backward(const T* x, const T* dy, int64_t batch, T* dx);

  T* weight() const { return weight_.data<T>(); }
  T* bias() const { return bias_.data<T>(); }
  T* grad_weight() const { return grad_weight_.data<T>(); }
  T* grad_bias() const { return grad_bias_.data<T>(); }

  // {prefix + "weight", ...}, {prefix + "bias", ...}, sharing storage with the layer.
  std::vector<DenseParam> parameters(const std::string& prefix) const;

 private:
  int in_;
  int out_;
  Tensor weight_, bias_, grad_weight_, grad_bias_;
};

extern template class Linear<float>;
extern template class Linear<double>;

}  // namespace hetrec::nn::nn
