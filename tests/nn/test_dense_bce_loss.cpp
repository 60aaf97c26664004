// Mean BCE with logits: values against the textbook formula, stability at large logits,
// gradients against central differences.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "dense_test_support.h"
#include "nn/bce_loss.h"

namespace hetrec {
namespace {

using testing::check_gradient;
using testing::random_vector;

std::vector<double> random_labels(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<double> y(static_cast<std::size_t>(n));
  for (double& v : y) v = rng.uniform() < 0.5 ? 0.0 : 1.0;
  return y;
}

// -[y log s + (1 - y) log(1 - s)] averaged, in long double; fine for moderate logits.
long double textbook_bce(const std::vector<double>& x, const std::vector<double>& y) {
  long double sum = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const long double s = 1.0L / (1.0L + std::exp(-static_cast<long double>(x[i])));
    sum -= y[i] * std::log(s) + (1 - y[i]) * std::log(1 - s);
  }
  return sum / static_cast<long double>(x.size());
}

TEST(BceLoss, MatchesTextbookFormula) {
  // 10000 samples: more than one fixed-size chunk of the partial sums.
  const int64_t n = 10000;
  const auto x = random_vector<double>(n, 101, 6.0);
  const auto y = random_labels(n, 102);
  auto grad = testing::poisoned<double>(n);
  const double loss = bce_with_logits(x.data(), y.data(), n, grad.data());
  EXPECT_NEAR(loss, static_cast<double>(textbook_bce(x, y)), 1e-13);
  for (int64_t i = 0; i < n; ++i) {
    const double s = 1.0 / (1.0 + std::exp(-x[i]));
    ASSERT_NEAR(grad[i], (s - y[i]) / n, 1e-18) << i;
  }
  // fp32 inputs, same formula.
  const std::vector<float> xf(x.begin(), x.end()), yf(y.begin(), y.end());
  std::vector<double> xr(xf.begin(), xf.end());
  EXPECT_NEAR(bce_with_logits(xf.data(), yf.data(), n, static_cast<float*>(nullptr)),
              static_cast<double>(textbook_bce(xr, y)), 1e-12);
}

TEST(BceLoss, StableAtLargeLogits) {
  const std::vector<double> x{100.0, -100.0, 800.0, -800.0};
  const std::vector<double> y{0.0, 1.0, 1.0, 0.0};
  std::vector<double> grad(4);
  // The wrong-side samples cost |x|; the right-side ones exp(-|x|) ~ 0.
  const double loss = bce_with_logits(x.data(), y.data(), 4, grad.data());
  EXPECT_NEAR(loss, (100.0 + 100.0) / 4, 1e-12);
  EXPECT_NEAR(grad[0], 0.25, 1e-15);
  EXPECT_NEAR(grad[1], -0.25, 1e-15);
  EXPECT_EQ(grad[2], 0.0);
  EXPECT_EQ(grad[3], 0.0);
}

TEST(BceLoss, GradientMatchesFiniteDifferences) {
  const int64_t n = 12;
  auto x = random_vector<double>(n, 111, 4.0);
  auto y = random_vector<double>(n, 112, 0.5);
  for (double& v : y) v += 0.5;  // soft labels in [0, 1)
  std::vector<double> grad(static_cast<std::size_t>(n));
  bce_with_logits(x.data(), y.data(), n, grad.data());
  auto loss = [&] { return bce_with_logits(x.data(), y.data(), n, static_cast<double*>(nullptr)); };
  check_gradient("dlogits", x.data(), grad.data(), n, loss);
}

}  // namespace
}  // namespace hetrec
