#include "nn/mlp.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "nn/parallel_threshold.h"

namespace hetrec::inline nn {

template <class T>
Mlp<T>::Mlp(int in_features, const std::vector<int>& widths, bool relu_last)
    : in_(in_features), relu_last_(relu_last) {
  HETREC_CHECK(!widths.empty(), "an MLP needs at least one layer");
  int prev = in_features;
  layers_.reserve(widths.size());
  for (int w : widths) {
    layers_.emplace_back(prev, w);
    max_width_ = std::max(max_width_, w);
    prev = w;
  }
  activations_.resize(widths.size());
}

template <class T>
void Mlp<T>::init(uint64_t seed, uint64_t first_stream) {
  for (std::size_t i = 0; i < layers_.size(); ++i) layers_[i].init(seed, first_stream + i);
}

template <class T>
void Mlp<T>::reserve(int64_t batch) {
  if (batch <= capacity_) return;
  // Fresh buffers hold NaN so that anything read before it is written shows up.
  const T poison = std::numeric_limits<T>::quiet_NaN();
  for (std::size_t i = 0; i < layers_.size(); ++i)
    activations_[i].assign(static_cast<std::size_t>(batch * layers_[i].out_features()), poison);
  for (auto& g : grad_buffers_) g.assign(static_cast<std::size_t>(batch * max_width_), poison);
  capacity_ = batch;
}

template <class T>
const T* Mlp<T>::forward(const T* x, int64_t batch) {
  reserve(batch);
  batch_ = batch;
  const T* in = x;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    T* out = activations_[i].data();
    layers_[i].forward(in, batch, out);
    if (has_relu(i)) {
      const int64_t n = batch * layers_[i].out_features();
#pragma omp parallel for simd schedule(static) if (n > kParallelMinElements)
      for (int64_t e = 0; e < n; ++e) out[e] = out[e] < T(0) ? T(0) : out[e];  // NaN stays NaN
    }
    in = out;
  }
  return in;
}

template <class T>
void Mlp<T>::backward(const T* x, const T* dy, T* dx) {
  HETREC_CHECK(batch_ > 0, "Mlp::backward without a forward");
  const T* grad_out = dy;  // gradient w.r.t. the output of layer i (after its ReLU)
  for (std::size_t k = layers_.size(); k-- > 0;) {
    const T* grad_pre = grad_out;  // gradient w.r.t. the output before the ReLU
    if (has_relu(k)) {
      T* masked = grad_buffers_[k % 2].data();  // may equal grad_out: element-wise, in place is fine
      const T* act = activations_[k].data();
      const int64_t n = batch_ * layers_[k].out_features();
#pragma omp parallel for simd schedule(static) if (n > kParallelMinElements)
      for (int64_t e = 0; e < n; ++e) masked[e] = act[e] > T(0) ? grad_out[e] : T(0);
      grad_pre = masked;
    }
    const T* in = k == 0 ? x : activations_[k - 1].data();
    T* grad_in = k == 0 ? dx : grad_buffers_[(k + 1) % 2].data();
    layers_[k].backward(in, grad_pre, batch_, grad_in);
    grad_out = grad_in;
  }
}

template <class T>
std::vector<DenseParam> Mlp<T>::parameters(const std::string& prefix) const {
  std::vector<DenseParam> out;
  for (std::size_t i = 0; i < layers_.size(); ++i)
    for (auto& p : layers_[i].parameters(prefix + std::to_string(i) + ".")) out.push_back(std::move(p));
  return out;
}

template class Mlp<float>;
template class Mlp<double>;

}  // namespace hetrec::nn::nn
