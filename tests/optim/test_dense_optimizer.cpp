// Dense optimizers against updates computed by hand in double, over three steps with
// fresh random gradients; the optimizer object's slots, names and config errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "optim/dense_optimizer.h"

namespace hetrec {
namespace {

constexpr int64_t kN = 257;  // not a multiple of any vector width
constexpr int kSteps = 3;
// fp32 updates against the double reference: a few ulps per step.
constexpr double kTolerance = 2e-6;

std::vector<float> random_floats(int64_t n, uint64_t seed, double lo, double hi) {
  Rng rng(seed);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = static_cast<float>(lo + (hi - lo) * rng.uniform());
  return v;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, const char* what, int step) {
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], kTolerance * (1.0 + std::abs(want[i]))) << what << " step " << step << " [" << i << "]";
}

TEST(DenseOptimizer, SgdMatchesHandComputedUpdates) {
  auto p = random_floats(kN, 1, -1, 1);
  std::vector<double> ref(p.begin(), p.end());
  const double lr = 0.3;
  for (int s = 1; s <= kSteps; ++s) {
    const auto g = random_floats(kN, 10 + s, -1, 1);
    sgd_update(p.data(), g.data(), kN, lr);
    for (std::size_t i = 0; i < ref.size(); ++i) ref[i] -= lr * g[i];
    expect_close(p, ref, "param", s);
  }
}

TEST(DenseOptimizer, AdagradMatchesHandComputedUpdates) {
  auto p = random_floats(kN, 2, -1, 1);
  const double initial = 0.1, lr = 0.05, eps = 1e-3;
  std::vector<float> sum(kN, static_cast<float>(initial));
  std::vector<double> ref(p.begin(), p.end()), ref_sum(kN, initial);
  for (int s = 1; s <= kSteps; ++s) {
    const auto g = random_floats(kN, 20 + s, -2, 2);
    adagrad_update(p.data(), g.data(), sum.data(), kN, lr, eps);
    for (std::size_t i = 0; i < ref.size(); ++i) {
      ref_sum[i] += double(g[i]) * g[i];
      ref[i] -= lr * g[i] / (std::sqrt(ref_sum[i]) + eps);
    }
    expect_close(sum, ref_sum, "sum", s);
    expect_close(p, ref, "param", s);
  }
}

TEST(DenseOptimizer, AdamMatchesHandComputedUpdates) {
  auto p = random_floats(kN, 3, -1, 1);
  AdamHyper h;
  h.lr = 0.01;
  h.beta1 = 0.8;
  h.beta2 = 0.95;
  h.eps = 1e-4;
  std::vector<float> m(kN, 0.0f), v(kN, 0.0f);
  std::vector<double> ref(p.begin(), p.end()), rm(kN, 0.0), rv(kN, 0.0);
  for (int s = 1; s <= kSteps; ++s) {
    const auto g = random_floats(kN, 30 + s, -1, 1);
    adam_update(p.data(), g.data(), m.data(), v.data(), kN, h, s);
    for (std::size_t i = 0; i < ref.size(); ++i) {
      rm[i] = h.beta1 * rm[i] + (1 - h.beta1) * g[i];
      rv[i] = h.beta2 * rv[i] + (1 - h.beta2) * double(g[i]) * g[i];
      const double mhat = rm[i] / (1 - std::pow(h.beta1, s));
      const double vhat = rv[i] / (1 - std::pow(h.beta2, s));
      ref[i] -= h.lr * mhat / (std::sqrt(vhat) + h.eps);
    }
    expect_close(m, rm, "exp_avg", s);
    expect_close(v, rv, "exp_avg_sq", s);
    expect_close(p, ref, "param", s);
  }
}

TEST(DenseOptimizer, AdamFirstStepMovesByLrTimesSign) {
  // After one step m_hat = g and v_hat = g^2, so p moves by lr * g / (|g| + eps).
  float p = 0.5f, m = 0.0f, v = 0.0f;
  const float g = -0.25f;
  AdamHyper h;
  h.lr = 0.1;
  adam_update(&p, &g, &m, &v, 1, h, 1);
  EXPECT_NEAR(p, 0.5 + 0.1 * 0.25 / (0.25 + 1e-8), 1e-7);
}

struct Fixture {
  Tensor value = Tensor::empty({3, 2}, DType::f32);
  Tensor grad = Tensor::empty({3, 2}, DType::f32);
  Fixture() {
    for (int i = 0; i < 6; ++i) {
      value.data<float>()[i] = 0.1f * static_cast<float>(i + 1);
      grad.data<float>()[i] = 0.5f - 0.2f * static_cast<float>(i);
    }
  }
  std::vector<DenseParam> params() const { return {{"layer.weight", value, grad}}; }
};

TEST(DenseOptimizer, AdagradObjectHoldsInitialAccumulatorAndNamesSlots) {
  Fixture f;
  OptimConfig cfg;
  cfg.dense = OptimizerKind::adagrad;
  cfg.adagrad_initial_accumulator = 0.25;
  cfg.eps = 1e-8;
  auto opt = DenseOptimizer::create(cfg, f.params());
  auto slots = opt->state();
  ASSERT_EQ(slots.size(), 1u);
  EXPECT_EQ(slots[0].name, "layer.weight.sum");
  EXPECT_EQ(slots[0].tensor.shape(), f.value.shape());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(slots[0].tensor.data<float>()[i], 0.25f);
  const float p0 = f.value.data<float>()[1], g0 = f.grad.data<float>()[1];
  opt->step(0.5, 1);
  const double want = p0 - 0.5 * g0 / (std::sqrt(0.25 + double(g0) * g0) + 1e-8);
  EXPECT_NEAR(f.value.data<float>()[1], want, 1e-6);
  EXPECT_NEAR(slots[0].tensor.data<float>()[1], 0.25 + double(g0) * g0, 1e-7);  // shares storage
}

TEST(DenseOptimizer, AdamObjectUsesStepForBiasCorrection) {
  Fixture a, b;
  OptimConfig cfg;
  cfg.dense = OptimizerKind::adam;
  auto opt_a = DenseOptimizer::create(cfg, a.params());
  auto opt_b = DenseOptimizer::create(cfg, b.params());
  const auto names = opt_a->state();
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0].name, "layer.weight.exp_avg");
  EXPECT_EQ(names[1].name, "layer.weight.exp_avg_sq");
  // Same state, same gradient, a different step number: a different update.
  opt_a->step(0.01, 1);
  opt_b->step(0.01, 7);
  EXPECT_NE(a.value.data<float>()[0], b.value.data<float>()[0]);
  EXPECT_TRUE(DenseOptimizer::create([] {
                OptimConfig c;
                c.dense = OptimizerKind::sgd;
                return c;
              }(), a.params())->state().empty());
}

void expect_config_error(const OptimConfig& cfg, const std::string& key) {
  Fixture f;
  try {
    DenseOptimizer::create(cfg, f.params());
    FAIL() << "expected a ConfigError naming " << key;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

TEST(DenseOptimizer, RejectsBadConfigNamingTheKey) {
  OptimConfig rowwise;
  rowwise.dense = OptimizerKind::rowwise_adagrad;
  expect_config_error(rowwise, "optim.dense");
  OptimConfig beta;
  beta.dense = OptimizerKind::adam;
  beta.beta1 = 1.0;
  expect_config_error(beta, "optim.beta1");
  OptimConfig beta2 = beta;
  beta2.beta1 = 0.9;
  beta2.beta2 = -0.1;
  expect_config_error(beta2, "optim.beta2");
  OptimConfig eps;
  eps.dense = OptimizerKind::adagrad;
  eps.eps = -1e-8;
  expect_config_error(eps, "optim.eps");
  OptimConfig acc;
  acc.dense = OptimizerKind::adagrad;
  acc.adagrad_initial_accumulator = -1;
  expect_config_error(acc, "optim.adagrad_initial_accumulator");
}

}  // namespace
}  // namespace hetrec
