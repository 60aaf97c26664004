#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "optim/sparse_update.h"

using namespace hetrec;

namespace {

std::vector<float> random_values(Rng& rng, int n, double scale, double offset = 0.0) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = static_cast<float>(offset + scale * (2.0 * rng.uniform() - 1.0));
  return v;
}

constexpr int kDim = 19;  // odd: a row that is not a multiple of any vector width

}  // namespace

TEST(SparseUpdate, SgdMatchesDoubleReference) {
  Rng rng(11);
  std::vector<float> w = random_values(rng, kDim, 0.5);
  const std::vector<float> g = random_values(rng, kDim, 2.0);
  const std::vector<float> w0 = w;
  const float lr = 0.37f;
  sgd_row_update(w.data(), g.data(), kDim, lr);
  for (int d = 0; d < kDim; ++d) {
    const double expect = static_cast<double>(w0[d]) - static_cast<double>(lr) * g[d];
    EXPECT_NEAR(w[d], expect, 1e-6 * (1.0 + std::fabs(expect))) << "element " << d;
  }
}

// torch.optim.Adagrad: state_sum += g^2; w -= lr * g / (sqrt(state_sum) + eps), over three
// steps with a non-zero initial accumulator and an eps large enough to matter.
TEST(SparseUpdate, AdagradMatchesDoubleReferenceOverSteps) {
  Rng rng(12);
  std::vector<float> w = random_values(rng, kDim, 0.5);
  std::vector<float> acc(kDim, 0.25f);
  std::vector<double> w_ref(w.begin(), w.end());
  std::vector<double> acc_ref(acc.begin(), acc.end());
  const float lr = 0.05f;
  const float eps = 1e-2f;
  for (int step = 0; step < 3; ++step) {
    const std::vector<float> g = random_values(rng, kDim, 1.5);
    adagrad_row_update(w.data(), acc.data(), g.data(), kDim, lr, eps);
    for (int d = 0; d < kDim; ++d) {
      acc_ref[d] += static_cast<double>(g[d]) * g[d];
      w_ref[d] -= static_cast<double>(lr) * g[d] / (std::sqrt(acc_ref[d]) + static_cast<double>(eps));
    }
  }
  for (int d = 0; d < kDim; ++d) {
    EXPECT_NEAR(acc[d], acc_ref[d], 1e-5 * acc_ref[d]) << "element " << d;
    EXPECT_NEAR(w[d], w_ref[d], 1e-5 * (1.0 + std::fabs(w_ref[d]))) << "element " << d;
  }
}

// FBGEMM EXACT_ROWWISE_ADAGRAD: acc += mean(g^2); w -= lr / (sqrt(acc) + eps) * g.
TEST(SparseUpdate, RowwiseAdagradMatchesDoubleReferenceOverSteps) {
  Rng rng(13);
  std::vector<float> w = random_values(rng, kDim, 0.5);
  float acc = 0.1f;
  std::vector<double> w_ref(w.begin(), w.end());
  double acc_ref = acc;
  const float lr = 0.08f;
  const float eps = 1e-3f;
  for (int step = 0; step < 3; ++step) {
    const std::vector<float> g = random_values(rng, kDim, 1.5, 0.3);
    rowwise_adagrad_row_update(w.data(), &acc, g.data(), kDim, lr, eps);
    double mean_sq = 0.0;
    for (int d = 0; d < kDim; ++d) mean_sq += static_cast<double>(g[d]) * g[d];
    acc_ref += mean_sq / kDim;
    const double multiplier = static_cast<double>(lr) / (std::sqrt(acc_ref) + static_cast<double>(eps));
    for (int d = 0; d < kDim; ++d) w_ref[d] -= multiplier * g[d];
  }
  EXPECT_NEAR(acc, acc_ref, 1e-5 * acc_ref);
  for (int d = 0; d < kDim; ++d) EXPECT_NEAR(w[d], w_ref[d], 1e-5 * (1.0 + std::fabs(w_ref[d]))) << "element " << d;
}

TEST(SparseUpdate, OptimizerKindsAndStateWidth) {
  EXPECT_EQ(sparse_state_per_row(OptimizerKind::sgd, 64), 0);
  EXPECT_EQ(sparse_state_per_row(OptimizerKind::adagrad, 64), 64);
  EXPECT_EQ(sparse_state_per_row(OptimizerKind::rowwise_adagrad, 64), 1);
  EXPECT_NO_THROW(check_sparse_optimizer(OptimizerKind::rowwise_adagrad));
  try {
    check_sparse_optimizer(OptimizerKind::adam);
    FAIL() << "adam accepted as a sparse optimizer";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("optim.sparse"), std::string::npos) << e.what();
  }
}
