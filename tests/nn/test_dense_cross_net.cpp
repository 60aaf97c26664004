// DCNv2 cross network (full and low rank): forward against a plain double reference,
// gradients against central differences, TorchRec parameter names and initialisation.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "dense_test_support.h"
#include "nn/cross_net.h"

namespace hetrec {
namespace {

using testing::check_gradient;
using testing::fill_random;
using testing::random_vector;
using testing::weighted_sum;

template <class T>
void randomize(CrossNet<T>& net, uint64_t seed) {
  const int64_t n = net.width(), r = net.rank();
  for (int l = 0; l < net.num_layers(); ++l) {
    const uint64_t s = seed + 10 * static_cast<uint64_t>(l);
    if (net.low_rank()) {
      fill_random(net.u(l), n * r, s, 0.5);
      fill_random(net.v(l), r * n, s + 1, 0.5);
    } else {
      fill_random(net.kernel(l), n * n, s, 0.5);
    }
    fill_random(net.bias(l), n, s + 2, 0.5);
  }
}

// x_{l+1} = x0 * (W_l x_l + b_l) + x_l, W_l = kernel or U V, per sample in double.
template <class T>
std::vector<double> reference_forward(const CrossNet<T>& net, const std::vector<double>& x0, int64_t batch) {
  const int n = net.width(), r = net.rank();
  std::vector<double> out(x0.size());
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<double> x(x0.begin() + b * n, x0.begin() + (b + 1) * n);
    for (int l = 0; l < net.num_layers(); ++l) {
      std::vector<double> wx(static_cast<std::size_t>(n), 0.0);
      if (net.low_rank()) {
        std::vector<double> vx(static_cast<std::size_t>(r), 0.0);
        for (int q = 0; q < r; ++q)
          for (int k = 0; k < n; ++k) vx[q] += static_cast<double>(net.v(l)[q * n + k]) * x[k];
        for (int i = 0; i < n; ++i)
          for (int q = 0; q < r; ++q) wx[i] += static_cast<double>(net.u(l)[i * r + q]) * vx[q];
      } else {
        for (int i = 0; i < n; ++i)
          for (int k = 0; k < n; ++k) wx[i] += static_cast<double>(net.kernel(l)[i * n + k]) * x[k];
      }
      for (int i = 0; i < n; ++i) x[i] = x0[b * n + i] * (wx[i] + static_cast<double>(net.bias(l)[i])) + x[i];
    }
    std::copy(x.begin(), x.end(), out.begin() + b * n);
  }
  return out;
}

template <class T>
void check_forward(int rank, double tol) {
  const int n = 10, layers = 3;
  CrossNet<T> net(n, layers, rank);
  randomize(net, 81);
  for (int64_t batch : {9, 5}) {  // the second forward reuses the first's buffers
    const auto x0 = random_vector<T>(batch * n, 82 + batch);
    const T* y = net.forward(x0.data(), batch);
    const auto ref = reference_forward(net, std::vector<double>(x0.begin(), x0.end()), batch);
    for (std::size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(y[i], ref[i], tol * (1 + std::abs(ref[i]))) << i;
  }
}

TEST(CrossNet, FullRankForwardMatchesReference) {
  check_forward<double>(0, 1e-13);
  check_forward<float>(0, 1e-5);
}

TEST(CrossNet, LowRankForwardMatchesReference) {
  check_forward<double>(3, 1e-13);
  check_forward<float>(3, 1e-5);
}

void check_gradients(int rank) {
  const int64_t batch = 4;
  const int n = 6, layers = 3;
  CrossNet<double> net(n, layers, rank);
  randomize(net, 91);
  auto x0 = random_vector<double>(batch * n, 92);
  const auto weights = random_vector<double>(batch * n, 93);
  auto loss = [&] { return weighted_sum(net.forward(x0.data(), batch), weights); };
  loss();
  auto dx0 = testing::poisoned<double>(batch * n);
  net.backward(x0.data(), weights.data(), dx0.data());
  check_gradient("dx0", x0.data(), dx0.data(), batch * n, loss);
  for (const DenseParam& p : net.parameters("cross_net.")) {
    // A copy, so that the reference stays fixed while the check reruns forward.
    const std::vector<double> grad(p.grad.data<double>(), p.grad.data<double>() + p.grad.numel());
    check_gradient(p.name, p.value.data<double>(), grad.data(), p.value.numel(), loss);
  }
}

TEST(CrossNet, FullRankGradientsMatchFiniteDifferences) { check_gradients(0); }
TEST(CrossNet, LowRankGradientsMatchFiniteDifferences) { check_gradients(2); }

// A batch large enough for the parallel loops gives the same input gradients per sample
// and the same parameter gradients as the sum of its two halves run separately.
TEST(CrossNet, LargeBatchMatchesItsHalves) {
  for (int rank : {0, 4}) {
    const int n = 12;
    const int64_t batch = 6000;  // batch x width > kParallelMinElements
    CrossNet<double> net(n, 2, rank);
    randomize(net, 95);
    const auto x0 = random_vector<double>(batch * n, 96);
    const auto dy = random_vector<double>(batch * n, 97);
    net.forward(x0.data(), batch);
    std::vector<double> dx_full(x0.size());
    net.backward(x0.data(), dy.data(), dx_full.data());
    std::vector<std::vector<double>> grads_full;
    for (const DenseParam& p : net.parameters(""))
      grads_full.emplace_back(p.grad.data<double>(), p.grad.data<double>() + p.grad.numel());
    std::vector<std::vector<double>> grads_sum(grads_full.size());
    std::vector<double> dx_halves(x0.size());
    for (int64_t half : {0, 1}) {
      const int64_t b0 = half * batch / 2;
      net.forward(x0.data() + b0 * n, batch / 2);
      net.backward(x0.data() + b0 * n, dy.data() + b0 * n, dx_halves.data() + b0 * n);
      const auto params = net.parameters("");
      for (std::size_t k = 0; k < params.size(); ++k) {
        const double* g = params[k].grad.data<double>();
        grads_sum[k].resize(static_cast<std::size_t>(params[k].grad.numel()), 0.0);
        for (std::size_t i = 0; i < grads_sum[k].size(); ++i) grads_sum[k][i] += g[i];
      }
    }
    for (std::size_t i = 0; i < dx_full.size(); ++i) ASSERT_NEAR(dx_full[i], dx_halves[i], 1e-12) << i;
    for (std::size_t k = 0; k < grads_full.size(); ++k)
      for (std::size_t i = 0; i < grads_full[k].size(); ++i)
        ASSERT_NEAR(grads_full[k][i], grads_sum[k][i], 1e-9 * (1 + std::abs(grads_sum[k][i]))) << k << " " << i;
  }
}

TEST(CrossNet, ParametersFollowTorchRecNamesAndShapes) {
  CrossNet<float> full(8, 2, 0);
  const auto fp = full.parameters("cross_net.");
  ASSERT_EQ(fp.size(), 4u);
  EXPECT_EQ(fp[0].name, "cross_net.kernels.0");
  EXPECT_EQ(fp[0].value.shape(), (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(fp[1].name, "cross_net.bias.0");
  EXPECT_EQ(fp[3].name, "cross_net.bias.1");
  CrossNet<float> low(8, 2, 3);
  const auto lp = low.parameters("cross_net.");
  ASSERT_EQ(lp.size(), 6u);
  EXPECT_EQ(lp[0].name, "cross_net.W_kernels.0");
  EXPECT_EQ(lp[0].value.shape(), (std::vector<int64_t>{8, 3}));
  EXPECT_EQ(lp[1].name, "cross_net.V_kernels.0");
  EXPECT_EQ(lp[1].value.shape(), (std::vector<int64_t>{3, 8}));
  EXPECT_EQ(lp[2].name, "cross_net.bias.0");
}

TEST(CrossNet, InitIsXavierNormalWithZeroBias) {
  const int n = 512, r = 64;
  CrossNet<double> net(n, 2, r), again(n, 2, r);
  net.init(3, 100);
  again.init(3, 100);
  double su = 0;
  for (int64_t i = 0; i < int64_t{n} * r; ++i) {
    ASSERT_EQ(net.u(1)[i], again.u(1)[i]);
    su += net.u(1)[i] * net.u(1)[i];
  }
  EXPECT_NE(net.u(0)[0], net.u(1)[0]);
  const double want = std::sqrt(2.0 / (n + r));
  EXPECT_NEAR(std::sqrt(su / (n * r)), want, 0.03 * want);  // 32768 draws: ~0.4% spread
  for (int i = 0; i < n; ++i) EXPECT_EQ(net.bias(0)[i], 0.0);
}

}  // namespace
}  // namespace hetrec
