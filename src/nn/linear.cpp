#include "nn/linear.h"

#include <cmath>
#include <string>

#include "core/error.h"
#include "core/rng.h"
#include "gemm/cpu_blas.h"
#include "nn/column_sum.h"
#include "nn/parallel_threshold.h"
#include "nn/scalar_dtype.h"

namespace hetrec::inline nn {

template <class T>
Linear<T>::Linear(int in_features, int out_features) : in_(in_features), out_(out_features) {
  HETREC_CHECK(in_ > 0 && out_ > 0,
               "Linear(" + std::to_string(in_) + ", " + std::to_string(out_) + "): sizes must be positive");
  weight_ = Tensor::zeros({out_, in_}, scalar_dtype<T>());
  bias_ = Tensor::zeros({out_}, scalar_dtype<T>());
  grad_weight_ = Tensor::zeros({out_, in_}, scalar_dtype<T>());
  grad_bias_ = Tensor::zeros({out_}, scalar_dtype<T>());
}

template <class T>
void Linear<T>::init(uint64_t seed, uint64_t stream) {
  Rng rng(seed, stream);
  const double weight_std = std::sqrt(2.0 / (in_ + out_));
  const double bias_std = std::sqrt(1.0 / out_);
  T* w = weight();
  for (int64_t i = 0; i < int64_t{out_} * in_; ++i) w[i] = static_cast<T>(weight_std * rng.normal());
  T* b = bias();
  for (int i = 0; i < out_; ++i) b[i] = static_cast<T>(bias_std * rng.normal());
}

template <class T>
void Linear<T>::forward(const T* x, int64_t batch, T* y) const {
  const T* b = bias();
#pragma omp parallel for schedule(static) if (batch * out_ > kParallelMinElements)
  for (int64_t i = 0; i < batch; ++i)
    for (int j = 0; j < out_; ++j) y[i * out_ + j] = b[j];
  // y += x W^T
  cpu_blas::gemm<T>(cpu_blas::Op::none, cpu_blas::Op::transpose, batch, out_, in_, T(1), x, in_, weight(), in_,
                    T(1), y, out_);
}

template <class T>
void Linear<T>::backward(const T* x, const T* dy, int64_t batch, T* dx) {
  // dW = dy^T x (out x in), db = column sums of dy, dx = dy W.
  cpu_blas::gemm<T>(cpu_blas::Op::transpose, cpu_blas::Op::none, out_, in_, batch, T(1), dy, out_, x, in_, T(0),
                    grad_weight(), in_);
  column_sum(dy, batch, out_, grad_bias());
  if (dx)
    cpu_blas::gemm<T>(cpu_blas::Op::none, cpu_blas::Op::none, batch, in_, out_, T(1), dy, out_, weight(), in_,
                      T(0), dx, in_);
}

template <class T>
std::vector<DenseParam> Linear<T>::parameters(const std::string& prefix) const {
  return {{prefix + "weight", weight_, grad_weight_}, {prefix + "bias", bias_, grad_bias_}};
}

template class Linear<float>;
template class Linear<double>;

}  // namespace hetrec::nn::nn
