#include "nn/dot_interaction.h"

#include <string>

#include "core/error.h"
#include "nn/parallel_threshold.h"

namespace hetrec::inline nn {

template <class T>
DotInteraction<T>::DotInteraction(int num_sparse, int dim, bool self_interaction)
    : num_sparse_(num_sparse), dim_(dim) {
  HETREC_CHECK(num_sparse >= 0 && dim > 0, "DotInteraction(" + std::to_string(num_sparse) + ", " +
                                               std::to_string(dim) + "): bad sizes");
  const int f = num_features();
  for (int i = 0; i < f; ++i)
    for (int j = 0; j < (self_interaction ? i + 1 : i); ++j) pairs_.emplace_back(i, j);
}

template <class T>
void DotInteraction<T>::forward(const T* dense, const T* sparse, int64_t batch, T* out) const {
  const int64_t d = dim_;
  const int64_t width = output_width();
  const int64_t pairs = num_pairs();
#pragma omp parallel for schedule(static) if (batch * pairs * d > kParallelMinElements)
  for (int64_t b = 0; b < batch; ++b) {
    const T* x0 = dense + b * d;
    const T* xs = sparse + b * num_sparse_ * d;
    auto feature = [&](int f) { return f == 0 ? x0 : xs + (f - 1) * d; };
    T* o = out + b * width;
    for (int64_t k = 0; k < d; ++k) o[k] = x0[k];
    for (int64_t p = 0; p < pairs; ++p) {
      const T* xi = feature(pairs_[static_cast<std::size_t>(p)].first);
      const T* xj = feature(pairs_[static_cast<std::size_t>(p)].second);
      T acc = T(0);
#pragma omp simd reduction(+ : acc)
      for (int64_t k = 0; k < d; ++k) acc += xi[k] * xj[k];
      o[d + p] = acc;
    }
  }
}

template <class T>
void DotInteraction<T>::backward(const T* dense, const T* sparse, const T* dout, int64_t batch, T* ddense,
                                 T* dsparse) const {
  const int64_t d = dim_;
  const int64_t width = output_width();
  const int64_t pairs = num_pairs();
#pragma omp parallel for schedule(static) if (batch * pairs * d > kParallelMinElements)
  for (int64_t b = 0; b < batch; ++b) {
    const T* x0 = dense + b * d;
    const T* xs = sparse + b * num_sparse_ * d;
    T* g0 = ddense + b * d;
    T* gs = dsparse + b * num_sparse_ * d;
    auto feature = [&](int f) { return f == 0 ? x0 : xs + (f - 1) * d; };
    auto grad = [&](int f) { return f == 0 ? g0 : gs + (f - 1) * d; };
    const T* go = dout + b * width;
    // The dense vector passes through to the output; every table starts from zero.
    for (int64_t k = 0; k < d; ++k) g0[k] = go[k];
    for (int64_t k = 0; k < num_sparse_ * d; ++k) gs[k] = T(0);
    // d(xi . xj) = xj dxi + xi dxj; a self pair (i == i) gets both halves, 2 xi.
    for (int64_t p = 0; p < pairs; ++p) {
      const auto [i, j] = pairs_[static_cast<std::size_t>(p)];
      const T g = go[d + p];
      const T* xi = feature(i);
      const T* xj = feature(j);
      T* gi = grad(i);
      T* gj = grad(j);
      for (int64_t k = 0; k < d; ++k) gi[k] += g * xj[k];
      for (int64_t k = 0; k < d; ++k) gj[k] += g * xi[k];
    }
  }
}

template class DotInteraction<float>;
template class DotInteraction<double>;

}  // namespace hetrec::nn::nn
