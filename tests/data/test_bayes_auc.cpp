#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "data/bayes_auc.h"
#include "data_test_util.h"

using namespace hetrec;

namespace {

// O(n^2) reference of the documented formula, in double.
double brute_expected_auc(const std::vector<double>& p) {
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i)
    for (std::size_t j = 0; j < p.size(); ++j) {
      if (i == j) continue;
      const double w = p[i] * (1.0 - p[j]);
      den += w;
      if (p[i] > p[j]) num += w;
      else if (p[i] == p[j]) num += 0.5 * w;
    }
  return num / den;
}

double brute_auc(const std::vector<double>& s, const std::vector<float>& y) {
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < s.size(); ++i)
    for (std::size_t j = 0; j < s.size(); ++j)
      if (y[i] == 1.0f && y[j] == 0.0f) {
        den += 1.0;
        num += s[i] > s[j] ? 1.0 : s[i] == s[j] ? 0.5 : 0.0;
      }
  return num / den;
}

std::vector<double> random_probabilities(std::size_t n, uint64_t seed, bool with_ties) {
  Rng rng(seed);
  std::vector<double> p(n);
  for (double& v : p) {
    v = rng.uniform();
    // Coarse values create many ties, including ties at 0 and 1.
    if (with_ties && rng.uniform() < 0.5) v = std::round(v * 8.0) / 8.0;
  }
  return p;
}

SyntheticConfig auc_config(double scale, double flip) {
  SyntheticConfig c;
  c.train_samples = 100;
  c.eval_samples = 20000;
  c.seed = 3;
  c.teacher_scale = scale;
  c.label_flip = flip;
  return c;
}

}  // namespace

TEST(ExpectedAuc, MatchesBruteForce) {
  for (bool ties : {false, true}) {
    for (std::size_t n : {2u, 3u, 17u, 300u}) {
      const auto p = random_probabilities(n, 40 + n, ties);
      EXPECT_NEAR(expected_auc(p), brute_expected_auc(p), 1e-12) << "n=" << n << " ties=" << ties;
    }
  }
}

TEST(ExpectedAuc, LimitCases) {
  EXPECT_NEAR(expected_auc(std::vector<double>{0.0, 1.0, 0.0, 1.0, 1.0}), 1.0, 1e-15);
  EXPECT_NEAR(expected_auc(std::vector<double>(50, 0.3)), 0.5, 1e-15);
  EXPECT_TRUE(std::isnan(expected_auc(std::vector<double>(5, 1.0))));
  EXPECT_TRUE(std::isnan(expected_auc(std::vector<double>{})));
}

TEST(ExpectedAuc, IsTheMeanOfRealisedAucs) {
  const auto p = random_probabilities(2000, 9, false);
  Rng rng(10);
  std::vector<float> y(p.size());
  double sum = 0.0, sq = 0.0;
  constexpr int kDraws = 300;
  for (int d = 0; d < kDraws; ++d) {
    for (std::size_t i = 0; i < p.size(); ++i) y[i] = rng.uniform() < p[i] ? 1.0f : 0.0f;
    const double a = auc(p, y);
    sum += a;
    sq += a * a;
  }
  const double mean = sum / kDraws;
  const double se = std::sqrt((sq / kDraws - mean * mean) / kDraws);
  // Within 4 standard errors of the mean, plus the O(1/n) gap of a ratio of expectations.
  EXPECT_NEAR(expected_auc(p), mean, 4.0 * se + 1.0 / 2000.0);
}

TEST(Auc, MatchesBruteForceWithTies) {
  Rng rng(21);
  for (std::size_t n : {5u, 64u, 401u}) {
    std::vector<double> s(n);
    std::vector<float> y(n);
    for (std::size_t i = 0; i < n; ++i) {
      s[i] = std::round(rng.uniform() * 20.0);  // many ties
      y[i] = rng.uniform() < 0.4 ? 1.0f : 0.0f;
    }
    y[0] = 1.0f;
    y[1] = 0.0f;
    EXPECT_NEAR(auc(s, y), brute_auc(s, y), 1e-12) << "n=" << n;
  }
  EXPECT_TRUE(std::isnan(auc(std::vector<double>{1.0, 2.0}, std::vector<float>{1.0f, 1.0f})));
}

TEST(BayesOptimalAuc, OfThePlantedTeacher) {
  const ModelConfig model = hetrec::testing::small_model(13);
  SyntheticSource source(model, auc_config(1.0, 0.0), Split::eval, 2);
  const int64_t n = 20000;
  std::vector<double> p(n);
  source.teacher_probabilities(0, n, p.data());
  const double bayes = bayes_optimal_auc(source, n);
  EXPECT_DOUBLE_EQ(bayes, expected_auc(p));
  // A spread of about 1.6 in the logit puts the ceiling near real click data.
  EXPECT_GT(bayes, 0.74);
  EXPECT_LT(bayes, 0.86);
  // The ideal scorer on the drawn labels lands near its expectation (sd about 0.004 here).
  EXPECT_NEAR(realised_teacher_auc(source, n), bayes, 0.02);
  // Less label noise, higher ceiling; pure noise, 0.5.
  SyntheticSource sharper(model, auc_config(3.0, 0.0), Split::eval, 2);
  EXPECT_GT(bayes_optimal_auc(sharper, n), bayes + 0.05);
  SyntheticSource noise(model, auc_config(1.0, 0.5), Split::eval, 2);
  EXPECT_TRUE(std::isnan(bayes_optimal_auc(noise, 100)) || std::abs(bayes_optimal_auc(noise, 100) - 0.5) < 1e-9);
  // Flipping labels with probability f shrinks the AUC's distance to 1/2.
  SyntheticSource flipped(model, auc_config(1.0, 0.2), Split::eval, 2);
  const double flipped_auc = bayes_optimal_auc(flipped, n);
  EXPECT_LT(flipped_auc, bayes);
  EXPECT_GT(flipped_auc, 0.5);
}
