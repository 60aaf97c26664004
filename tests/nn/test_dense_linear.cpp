// Linear and MLP: forward against a plain double reference, gradients against central
// differences in double, initialisation statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "dense_test_support.h"
#include "nn/linear.h"
#include "nn/mlp.h"

namespace hetrec {
namespace {

using testing::check_gradient;
using testing::fill_random;
using testing::random_vector;
using testing::weighted_sum;

// y = x W^T + b (optionally ReLU) in double.
template <class T>
std::vector<double> reference_linear(const std::vector<double>& x, int64_t batch, const Linear<T>& layer,
                                     bool relu) {
  const int in = layer.in_features(), out = layer.out_features();
  std::vector<double> y(static_cast<std::size_t>(batch * out));
  for (int64_t b = 0; b < batch; ++b)
    for (int o = 0; o < out; ++o) {
      double acc = layer.bias()[o];
      for (int i = 0; i < in; ++i) acc += x[b * in + i] * static_cast<double>(layer.weight()[o * in + i]);
      y[b * out + o] = relu ? std::max(acc, 0.0) : acc;
    }
  return y;
}

template <class T>
void randomize(Linear<T>& layer, uint64_t seed) {
  fill_random(layer.weight(), int64_t{layer.out_features()} * layer.in_features(), seed);
  fill_random(layer.bias(), layer.out_features(), seed + 1);
}

template <class T>
void check_linear_forward(double tol) {
  const int64_t batch = 9;
  Linear<T> layer(13, 7);
  randomize(layer, 3);
  const auto x = random_vector<T>(batch * 13, 4);
  auto y = testing::poisoned<T>(batch * 7);
  layer.forward(x.data(), batch, y.data());
  const auto ref = reference_linear(std::vector<double>(x.begin(), x.end()), batch, layer, false);
  for (std::size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(y[i], ref[i], tol * (1 + std::abs(ref[i]))) << i;
}

TEST(Linear, ForwardMatchesReference) {
  check_linear_forward<double>(1e-13);
  check_linear_forward<float>(1e-5);
}

TEST(Linear, GradientsMatchFiniteDifferences) {
  const int64_t batch = 5;
  const int in = 6, out = 4;
  Linear<double> layer(in, out);
  randomize(layer, 21);
  auto x = random_vector<double>(batch * in, 22);
  const auto weights = random_vector<double>(batch * out, 23);  // dL/dy
  std::vector<double> y(static_cast<std::size_t>(batch * out));
  auto loss = [&] {
    layer.forward(x.data(), batch, y.data());
    return weighted_sum(y.data(), weights);
  };
  auto dx = testing::poisoned<double>(batch * in);
  layer.backward(x.data(), weights.data(), batch, dx.data());
  const std::vector<double> grad_w(layer.grad_weight(), layer.grad_weight() + out * in);
  const std::vector<double> grad_b(layer.grad_bias(), layer.grad_bias() + out);
  check_gradient("dx", x.data(), dx.data(), batch * in, loss);
  check_gradient("dW", layer.weight(), grad_w.data(), out * in, loss);
  check_gradient("db", layer.bias(), grad_b.data(), out, loss);
}

TEST(Linear, BackwardOverwritesGradientsAndSkipsNullInputGradient) {
  const int64_t batch = 4;
  Linear<float> layer(5, 3);
  randomize(layer, 31);
  const auto x = random_vector<float>(batch * 5, 32);
  const auto dy = random_vector<float>(batch * 3, 33);
  layer.backward(x.data(), dy.data(), batch, nullptr);
  const std::vector<float> first(layer.grad_weight(), layer.grad_weight() + 15);
  layer.backward(x.data(), dy.data(), batch, nullptr);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(layer.grad_weight()[i], first[static_cast<std::size_t>(i)]);
}

TEST(Linear, InitFollowsDlrmReference) {
  const int in = 64, out = 1024;
  Linear<double> a(in, out), b(in, out), c(in, out);
  a.init(5, 0);
  b.init(5, 0);
  c.init(5, 1);
  double sw = 0, sb = 0;
  for (int i = 0; i < in * out; ++i) {
    ASSERT_EQ(a.weight()[i], b.weight()[i]);
    sw += a.weight()[i] * a.weight()[i];
  }
  for (int i = 0; i < out; ++i) sb += a.bias()[i] * a.bias()[i];
  EXPECT_NE(a.weight()[0], c.weight()[0]);  // another stream, other numbers
  // Sample standard deviations; 65536 and 1024 draws put them within ~1% and ~3%.
  EXPECT_NEAR(std::sqrt(sw / (in * out)), std::sqrt(2.0 / (in + out)), 0.03 * std::sqrt(2.0 / (in + out)));
  EXPECT_NEAR(std::sqrt(sb / out), std::sqrt(1.0 / out), 0.1 * std::sqrt(1.0 / out));
}

// ---- MLP ----

template <class T>
std::vector<double> reference_mlp(Mlp<T>& mlp, const std::vector<double>& x, int64_t batch, bool relu_last) {
  std::vector<double> h = x;
  for (int l = 0; l < mlp.num_layers(); ++l)
    h = reference_linear(h, batch, mlp.layer(l), l + 1 < mlp.num_layers() || relu_last);
  return h;
}

template <class T>
void randomize(Mlp<T>& mlp, uint64_t seed) {
  for (int l = 0; l < mlp.num_layers(); ++l) randomize(mlp.layer(l), seed + 10 * static_cast<uint64_t>(l));
}

template <class T>
void check_mlp_forward(bool relu_last, double tol) {
  Mlp<T> mlp(6, {9, 5, 3}, relu_last);
  randomize(mlp, 41);
  // A larger batch first, then a smaller one: the buffers are reused, not reallocated.
  for (int64_t batch : {11, 4}) {
    const auto x = random_vector<T>(batch * 6, 42 + batch);
    const T* y = mlp.forward(x.data(), batch);
    const auto ref = reference_mlp(mlp, std::vector<double>(x.begin(), x.end()), batch, relu_last);
    for (std::size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(y[i], ref[i], tol * (1 + std::abs(ref[i]))) << i;
  }
}

TEST(Mlp, ForwardMatchesReference) {
  for (bool relu_last : {false, true}) {
    check_mlp_forward<double>(relu_last, 1e-13);
    check_mlp_forward<float>(relu_last, 1e-5);
  }
}

void check_mlp_gradients(bool relu_last) {
  const int64_t batch = 6;
  Mlp<double> mlp(5, {7, 6, 4}, relu_last);
  randomize(mlp, 51);
  auto x = random_vector<double>(batch * 5, 52);
  const auto weights = random_vector<double>(batch * 4, 53);
  auto loss = [&] { return weighted_sum(mlp.forward(x.data(), batch), weights); };
  loss();
  auto dx = testing::poisoned<double>(batch * 5);
  mlp.backward(x.data(), weights.data(), dx.data());
  std::vector<std::vector<double>> grads;  // copied: the checks below rerun forward only
  for (int l = 0; l < mlp.num_layers(); ++l) {
    const Linear<double>& ly = mlp.layer(l);
    grads.emplace_back(ly.grad_weight(), ly.grad_weight() + ly.out_features() * ly.in_features());
    grads.emplace_back(ly.grad_bias(), ly.grad_bias() + ly.out_features());
  }
  check_gradient("dx", x.data(), dx.data(), batch * 5, loss);
  for (int l = 0; l < mlp.num_layers(); ++l) {
    Linear<double>& ly = mlp.layer(l);
    const auto k = static_cast<std::size_t>(2 * l);
    check_gradient("layer " + std::to_string(l) + " dW", ly.weight(), grads[k].data(),
                   int64_t{ly.out_features()} * ly.in_features(), loss);
    check_gradient("layer " + std::to_string(l) + " db", ly.bias(), grads[k + 1].data(), ly.out_features(), loss);
  }
}

TEST(Mlp, GradientsMatchFiniteDifferencesWithoutLastRelu) { check_mlp_gradients(false); }
TEST(Mlp, GradientsMatchFiniteDifferencesWithLastRelu) { check_mlp_gradients(true); }

// A batch large enough for the parallel loops (bias broadcast, ReLU, column sums) gives
// the same outputs and input gradients per sample, and the same parameter gradients as
// the sum of its two halves run separately.
TEST(Mlp, LargeBatchMatchesItsHalves) {
  const int64_t batch = 3000;  // batch x 32 > kParallelMinElements
  Mlp<double> mlp(7, {32, 24}, true);
  randomize(mlp, 57);
  const auto x = random_vector<double>(batch * 7, 58);
  const auto dy = random_vector<double>(batch * 24, 59);
  const double* y = mlp.forward(x.data(), batch);
  const auto ref = reference_mlp(mlp, x, batch, true);
  for (std::size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(y[i], ref[i], 1e-12 * (1 + std::abs(ref[i]))) << i;
  std::vector<double> dx_full(x.size()), dx_halves(x.size());
  mlp.backward(x.data(), dy.data(), dx_full.data());
  std::vector<std::vector<double>> full, sum;
  for (const DenseParam& p : mlp.parameters("")) {
    full.emplace_back(p.grad.data<double>(), p.grad.data<double>() + p.grad.numel());
    sum.emplace_back(static_cast<std::size_t>(p.grad.numel()), 0.0);
  }
  for (int64_t b0 : {int64_t{0}, batch / 2}) {
    mlp.forward(x.data() + b0 * 7, batch / 2);
    mlp.backward(x.data() + b0 * 7, dy.data() + b0 * 24, dx_halves.data() + b0 * 7);
    const auto params = mlp.parameters("");
    for (std::size_t k = 0; k < params.size(); ++k)
      for (std::size_t i = 0; i < sum[k].size(); ++i) sum[k][i] += params[k].grad.data<double>()[i];
  }
  for (std::size_t i = 0; i < dx_full.size(); ++i) ASSERT_NEAR(dx_full[i], dx_halves[i], 1e-12) << i;
  for (std::size_t k = 0; k < full.size(); ++k)
    for (std::size_t i = 0; i < full[k].size(); ++i)
      ASSERT_NEAR(full[k][i], sum[k][i], 1e-9 * (1 + std::abs(sum[k][i]))) << k << " " << i;
}

TEST(Mlp, ParameterNamesArePytorchLike) {
  Mlp<float> mlp(3, {4, 1}, false);
  const auto params = mlp.parameters("top_mlp.");
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].name, "top_mlp.0.weight");
  EXPECT_EQ(params[0].value.shape(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(params[3].name, "top_mlp.1.bias");
  EXPECT_EQ(params[3].grad.shape(), (std::vector<int64_t>{1}));
}

}  // namespace
}  // namespace hetrec
