#pragma once
// A stack of Linear layers with ReLU after every layer, or after all but the last (the
// DLRM bottom and top MLPs). Keeps the activations of the last forward for backward.
#include <cstdint>
#include <string>
#include <vector>

#include "nn/linear.h"
#include "optim/dense_param.h"

namespace hetrec::inline nn {

template <class T>
class Mlp {
 public:
  // widths[i] is the output width of layer i; relu_last puts a ReLU after the last layer.
  Mlp(int in_features, const std::vector<int>& widths, bool relu_last);

  int in_features() const { return in_; }
  int out_features() const { return layers_.back().out_features(); }
  int num_layers() const { return static_cast<int>(layers_.size()); }
  Linear<T>& layer(int i) { return layers_.at(static_cast<std::size_t>(i)); }
  const Linear<T>& layer(int i) const { return layers_.at(static_cast<std::size_t>(i)); }

  // Layer i draws its initial values from Rng(seed, first_stream + i) (see Linear::init).
  void init(uint64_t seed, uint64_t first_stream);

  // x: batch x in. Returns the output (batch x out), owned by the MLP and valid until the
  // next forward. Buffers grow only when the batch exceeds every batch seen so far.
  const T* forward(const T* x, int64_t batch);
  // x: the input of the last forward; dy: batch x out. Overwrites every layer's parameter
  // gradients; writes dx (batch x in) unless null.
  void backward(const T* x, const T* dy, T* dx);

  // "<prefix><i>.weight", "<prefix><i>.bias" for every layer i.
  std::vector<DenseParam> parameters(const std::string& prefix) const;

 private:
  void reserve(int64_t batch);
  bool has_relu(std::size_t layer) const { return layer + 1 < layers_.size() || relu_last_; }

  int in_;
  bool relu_last_;
  std::vector<Linear<T>> layers_;
  int max_width_ = 0;
  int64_t batch_ = 0;     // batch of the last forward
  int64_t capacity_ = 0;  // batch the buffers are sized for
  std::vector<std::vector<T>> activations_;  // [i]: output of layer i after its ReLU
  std::vector<T> grad_buffers_[2];           // ping-pong gradients between layers
};

extern template class Mlp<float>;
extern template class Mlp<double>;

}  // namespace hetrec::nn::nn
