#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "train/auc.h"

using namespace hetrec;

namespace {
// O(n^2) definition: P(score_pos > score_neg) + 0.5 P(equal).
double brute_force_auc(const std::vector<float>& s, const std::vector<float>& y) {
  double num = 0, pairs = 0;
  for (std::size_t i = 0; i < s.size(); ++i)
    for (std::size_t j = 0; j < s.size(); ++j)
      if (y[i] > 0.5f && y[j] < 0.5f) {
        pairs += 1;
        num += s[i] > s[j] ? 1.0 : (s[i] == s[j] ? 0.5 : 0.0);
      }
  return num / pairs;
}
}  // namespace

TEST(Auc, MatchesBruteForceWithManyTies) {
  Rng rng(42);
  for (int trial = 0; trial < 20; ++trial) {
    const int n = 50 + static_cast<int>(rng.below(400));
    std::vector<float> s(n), y(n);
    const int levels = 1 + static_cast<int>(rng.below(12));  // few distinct scores: many ties
    for (int i = 0; i < n; ++i) {
      s[i] = static_cast<float>(rng.below(static_cast<uint64_t>(levels)));
      y[i] = rng.uniform() < 0.3 + 0.05 * s[i] ? 1.0f : 0.0f;
    }
    y[0] = 1.0f;
    y[1] = 0.0f;
    EXPECT_NEAR(roc_auc(s, y), brute_force_auc(s, y), 1e-12) << "trial " << trial;
  }
}

TEST(Auc, ContinuousScoresAndEdgeCases) {
  Rng rng(3);
  std::vector<float> s(1000), y(1000);
  for (int i = 0; i < 1000; ++i) {
    s[i] = static_cast<float>(rng.normal());
    y[i] = rng.uniform() < 1.0 / (1.0 + std::exp(-2.0 * s[i])) ? 1.0f : 0.0f;
  }
  EXPECT_NEAR(roc_auc(s, y), brute_force_auc(s, y), 1e-12);
  std::vector<float> perfect_s = {0.1f, 0.2f, 0.8f, 0.9f}, perfect_y = {0, 0, 1, 1};
  EXPECT_DOUBLE_EQ(roc_auc(perfect_s, perfect_y), 1.0);
  std::vector<float> same = {0.5f, 0.5f, 0.5f};
  std::vector<float> labels = {0, 1, 0};
  EXPECT_DOUBLE_EQ(roc_auc(same, labels), 0.5);
  std::vector<float> one_class = {1, 1, 1};
  EXPECT_TRUE(std::isnan(roc_auc(same, one_class)));
}

TEST(Auc, LogLossMatchesDefinition) {
  Rng rng(5);
  std::vector<float> z(200), y(200);
  double ref = 0;
  for (int i = 0; i < 200; ++i) {
    z[i] = static_cast<float>(rng.normal() * 4);
    y[i] = rng.uniform() < 0.4 ? 1.0f : 0.0f;
    const double p = 1.0 / (1.0 + std::exp(-static_cast<double>(z[i])));
    ref += -(y[i] * std::log(p) + (1 - y[i]) * std::log(1 - p));
  }
  EXPECT_NEAR(log_loss_from_logits(z, y), ref / 200, 1e-9);
  std::vector<float> big = {100.0f, -100.0f}, lab = {1.0f, 0.0f};
  EXPECT_NEAR(log_loss_from_logits(big, lab), 0.0, 1e-30);
}
