#pragma once
// DCNv2 cross network: x_{l+1} = x0 * (W_l x_l + b_l) + x_l (element-wise product), for
// l = 0 .. layers-1, on rows of width n. W_l is a full n x n matrix ("kernels.l", as in
// TorchRec CrossNet) or the low-rank product U_l V_l with U_l: n x r ("W_kernels.l") and
// V_l: r x n ("V_kernels.l"), as in TorchRec LowRankCrossNet. Bias "bias.l": n.
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "optim/dense_param.h"

namespace hetrec::inline nn {

template <class T>
class CrossNet {
 public:
  // rank 0 = full-rank layers; rank > 0 = low-rank U V. Parameters start zeroed.
  CrossNet(int width, int num_layers, int rank);

  int width() const { return width_; }
  int num_layers() const { return static_cast<int>(layers_.size()); }
  int rank() const { return rank_; }
  bool low_rank() const { return rank_ > 0; }

  // TorchRec initialisation: every kernel Xavier-normal, N(0, sqrt(2 / (fan_in +
  // fan_out))), biases zero. Layer l draws kernel-by-kernel (U before V) in row-major
  // order from Rng(seed, first_stream + l).
  void init(uint64_t seed, uint64_t first_stream);

  // x0: batch x width. Returns x_L (batch x width), owned by the net and valid until the
  // next forward. Buffers grow only when the batch exceeds every batch seen so far.
  const T* forward(const T* x0, int64_t batch);
  // x0: the input of the last forward; dy: batch x width. Overwrites every parameter
  // gradient and writes dx0 (batch x width).
  void backward(const T* x0, const T* dy, T* dx0);

  // Full rank: W_l (n x n); low rank: U_l (n x r) and V_l (r x n). Null where absent.
  T* kernel(int l) const { return data(layer(l).kernel); }
  T* u(int l) const { return data(layer(l).u); }
  T* v(int l) const { return data(layer(l).v); }
  T* bias(int l) const { return data(layer(l).bias); }
  T* grad_kernel(int l) const { return data(layer(l).grad_kernel); }
  T* grad_u(int l) const { return data(layer(l).grad_u); }
  T* grad_v(int l) const { return data(layer(l).grad_v); }
  T* grad_bias(int l) const { return data(layer(l).grad_bias); }

  // "<prefix>kernels.l" or "<prefix>W_kernels.l" and "<prefix>V_kernels.l", then
  // "<prefix>bias.l", layer by layer.
  std::vector<DenseParam> parameters(const std::string& prefix) const;

 private:
  struct Layer {
    Tensor kernel, u, v, bias;
    Tensor grad_kernel, grad_u, grad_v, grad_bias;
  };
  struct Workspace {
    std::vector<T> x;   // x_l for l = 1..L, batch x width each
    std::vector<T> z;   // W_l x_l + b_l for l = 0..L-1, batch x width each
    std::vector<T> vx;  // low rank: V_l x_l for l = 0..L-1, batch x rank each
    std::vector<T> grad[2];  // ping-pong gradient w.r.t. x_l
    std::vector<T> grad_z;   // gradient w.r.t. z_l
    std::vector<T> grad_vx;  // low rank: gradient w.r.t. V_l x_l
  };
  static T* data(const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; }
  const Layer& layer(int l) const { return layers_.at(static_cast<std::size_t>(l)); }
  void reserve(int64_t batch);
  T* x_buf(int l) { return ws_.x.data() + (l - 1) * batch_ * width_; }  // l >= 1
  T* z_buf(int l) { return ws_.z.data() + l * batch_ * width_; }
  T* vx_buf(int l) { return ws_.vx.data() + l * batch_ * rank_; }

  int width_;
  int rank_;
  std::vector<Layer> layers_;
  int64_t batch_ = 0;
  int64_t capacity_ = 0;
  Workspace ws_;
};

extern template class CrossNet<float>;
extern template class CrossNet<double>;

}  // namespace hetrec::nn::nn
