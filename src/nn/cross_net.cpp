#include "nn/cross_net.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/rng.h"
#include "gemm/cpu_blas.h"
#include "nn/column_sum.h"
#include "nn/parallel_threshold.h"
#include "nn/scalar_dtype.h"

namespace hetrec::inline nn {

using cpu_blas::Op;

template <class T>
CrossNet<T>::CrossNet(int width, int num_layers, int rank) : width_(width), rank_(rank) {
  HETREC_CHECK(width > 0 && num_layers > 0 && rank >= 0,
               "CrossNet(" + std::to_string(width) + ", " + std::to_string(num_layers) + ", " +
                   std::to_string(rank) + "): bad sizes");
  const DType dt = scalar_dtype<T>();
  layers_.resize(static_cast<std::size_t>(num_layers));
  for (Layer& l : layers_) {
    if (low_rank()) {
      l.u = Tensor::zeros({width, rank}, dt);
      l.v = Tensor::zeros({rank, width}, dt);
      l.grad_u = Tensor::zeros({width, rank}, dt);
      l.grad_v = Tensor::zeros({rank, width}, dt);
    } else {
      l.kernel = Tensor::zeros({width, width}, dt);
      l.grad_kernel = Tensor::zeros({width, width}, dt);
    }
    l.bias = Tensor::zeros({width}, dt);
    l.grad_bias = Tensor::zeros({width}, dt);
  }
}

template <class T>
void CrossNet<T>::init(uint64_t seed, uint64_t first_stream) {
  auto xavier_normal = [](Rng& rng, const Tensor& t) {
    const double std_dev = std::sqrt(2.0 / static_cast<double>(t.dim(0) + t.dim(1)));
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(std_dev * rng.normal());
  };
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    Rng rng(seed, first_stream + l);
    const Layer& ly = layers_[l];
    if (low_rank()) {
      xavier_normal(rng, ly.u);
      xavier_normal(rng, ly.v);
    } else {
      xavier_normal(rng, ly.kernel);
    }
    T* b = ly.bias.template data<T>();
    for (int i = 0; i < width_; ++i) b[i] = T(0);
  }
}

template <class T>
void CrossNet<T>::reserve(int64_t batch) {
  if (batch <= capacity_) return;
  // Fresh buffers hold NaN so that anything read before it is written shows up.
  const T poison = std::numeric_limits<T>::quiet_NaN();
  const auto rows = static_cast<std::size_t>(batch);
  const auto n = static_cast<std::size_t>(width_);
  const auto r = static_cast<std::size_t>(rank_);
  const auto layers = layers_.size();
  ws_.x.assign(layers * rows * n, poison);
  ws_.z.assign(layers * rows * n, poison);
  ws_.vx.assign(layers * rows * r, poison);
  for (auto& g : ws_.grad) g.assign(rows * n, poison);
  ws_.grad_z.assign(rows * n, poison);
  ws_.grad_vx.assign(rows * r, poison);
  capacity_ = batch;
}

template <class T>
const T* CrossNet<T>::forward(const T* x0, int64_t batch) {
  reserve(batch);
  batch_ = batch;
  const int64_t n = width_;
  const int64_t r = rank_;
  const T* xl = x0;
  for (int l = 0; l < num_layers(); ++l) {
    const Layer& ly = layer(l);
    T* z = z_buf(l);
    const T* b = data(ly.bias);
#pragma omp parallel for schedule(static) if (batch * n > kParallelMinElements)
    for (int64_t i = 0; i < batch; ++i)
      for (int64_t k = 0; k < n; ++k) z[i * n + k] = b[k];
    if (low_rank()) {
      T* vx = vx_buf(l);
      // vx = x_l V^T (batch x r), z += vx U^T (batch x n)
      cpu_blas::gemm<T>(Op::none, Op::transpose, batch, r, n, T(1), xl, n, data(ly.v), n, T(0), vx, r);
      cpu_blas::gemm<T>(Op::none, Op::transpose, batch, n, r, T(1), vx, r, data(ly.u), r, T(1), z, n);
    } else {
      cpu_blas::gemm<T>(Op::none, Op::transpose, batch, n, n, T(1), xl, n, data(ly.kernel), n, T(1), z, n);
    }
    T* next = x_buf(l + 1);
    const int64_t count = batch * n;
#pragma omp parallel for simd schedule(static) if (count > kParallelMinElements)
    for (int64_t e = 0; e < count; ++e) next[e] = x0[e] * z[e] + xl[e];
    xl = next;
  }
  return xl;
}

template <class T>
void CrossNet<T>::backward(const T* x0, const T* dy, T* dx0) {
  HETREC_CHECK(batch_ > 0, "CrossNet::backward without a forward");
  const int64_t batch = batch_;
  const int64_t n = width_;
  const int64_t r = rank_;
  const int64_t count = batch * n;
  T* grad_z = ws_.grad_z.data();
  const T* grad_next = dy;  // gradient w.r.t. x_{l+1}
  for (int l = num_layers() - 1; l >= 0; --l) {
    const Layer& ly = layer(l);
    const T* xl = l == 0 ? x0 : x_buf(l);
    const T* z = z_buf(l);
    // x_{l+1} = x0 * z + x_l: dz = g * x0; x0 collects g * z from every layer directly.
    const bool first = l == num_layers() - 1;
#pragma omp parallel for simd schedule(static) if (count > kParallelMinElements)
    for (int64_t e = 0; e < count; ++e) {
      grad_z[e] = grad_next[e] * x0[e];
      dx0[e] = first ? grad_next[e] * z[e] : dx0[e] + grad_next[e] * z[e];
    }
    column_sum(grad_z, batch, n, data(ly.grad_bias));
    // The path through x_l: dx_l = g + dz W_l.
    T* grad_l = ws_.grad[l % 2].data();
    std::copy(grad_next, grad_next + count, grad_l);
    if (low_rank()) {
      const T* vx = vx_buf(l);
      T* grad_vx = ws_.grad_vx.data();
      // z = vx U^T + b: dU = dz^T vx, dvx = dz U; vx = x_l V^T: dV = dvx^T x_l, dx_l += dvx V.
      cpu_blas::gemm<T>(Op::transpose, Op::none, n, r, batch, T(1), grad_z, n, vx, r, T(0), data(ly.grad_u), r);
      cpu_blas::gemm<T>(Op::none, Op::none, batch, r, n, T(1), grad_z, n, data(ly.u), r, T(0), grad_vx, r);
      cpu_blas::gemm<T>(Op::transpose, Op::none, r, n, batch, T(1), grad_vx, r, xl, n, T(0), data(ly.grad_v), n);
      cpu_blas::gemm<T>(Op::none, Op::none, batch, n, r, T(1), grad_vx, r, data(ly.v), n, T(1), grad_l, n);
    } else {
      // z = x_l W^T + b: dW = dz^T x_l, dx_l += dz W.
      cpu_blas::gemm<T>(Op::transpose, Op::none, n, n, batch, T(1), grad_z, n, xl, n, T(0), data(ly.grad_kernel),
                        n);
      cpu_blas::gemm<T>(Op::none, Op::none, batch, n, n, T(1), grad_z, n, data(ly.kernel), n, T(1), grad_l, n);
    }
    grad_next = grad_l;
  }
  // x_0 is also the input of layer 0.
#pragma omp parallel for simd schedule(static) if (count > kParallelMinElements)
  for (int64_t e = 0; e < count; ++e) dx0[e] += grad_next[e];
}

template <class T>
std::vector<DenseParam> CrossNet<T>::parameters(const std::string& prefix) const {
  std::vector<DenseParam> out;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const std::string idx = std::to_string(l);
    const Layer& ly = layers_[l];
    if (low_rank()) {
      out.push_back({prefix + "W_kernels." + idx, ly.u, ly.grad_u});
      out.push_back({prefix + "V_kernels." + idx, ly.v, ly.grad_v});
    } else {
      out.push_back({prefix + "kernels." + idx, ly.kernel, ly.grad_kernel});
    }
    out.push_back({prefix + "bias." + idx, ly.bias, ly.grad_bias});
  }
  return out;
}

template class CrossNet<float>;
template class CrossNet<double>;

}  // namespace hetrec::nn::nn
