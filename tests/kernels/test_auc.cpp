// The device ROC AUC against the CPU AUC (train/auc.h) and a brute-force double
// reference, on random scores with many ties (including -0 and +0, which compare equal),
// and through the GPU model's device_roc_auc as evaluation calls it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "../gpu/device_test_support.h"
#include "core/rng.h"
#include "kernels/auc.h"
#include "model/gpu/gpu_dlrm.h"
#include "train/auc.h"

namespace hetrec {
namespace {

double device_auc(const std::vector<float>& scores, const std::vector<float>& labels) {
  const auto n = static_cast<int64_t>(scores.size());
  gpu::DeviceBuffer ds = testing::to_device(scores), dl = testing::to_device(labels);
  gpu::DeviceBuffer out = testing::to_device(std::vector<double>{-1.0});
  gpu::DeviceBuffer ws(kernels::roc_auc_workspace_bytes(n));
  kernels::roc_auc(ds.as<float>(), dl.as<float>(), n, out.as<double>(), ws.get(), ws.bytes(), nullptr);
  return testing::to_host<double>(out, 1)[0];
}

// P(positive scores above negative) + half P(tie), over all pairs, in double.
double brute_force_auc(const std::vector<float>& s, const std::vector<float>& y) {
  double u = 0, pos = 0, neg = 0;
  for (std::size_t i = 0; i < s.size(); ++i) (y[i] > 0.5f ? pos : neg) += 1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!(y[i] > 0.5f)) continue;
    for (std::size_t j = 0; j < s.size(); ++j) {
      if (y[j] > 0.5f) continue;
      u += s[i] > s[j] ? 1.0 : s[i] == s[j] ? 0.5 : 0.0;
    }
  }
  return u / (pos * neg);
}

// Scores on a coarse grid (many ties), signed zeros of both signs, some far values.
void random_case(int64_t n, uint64_t seed, double positive_rate, std::vector<float>& s, std::vector<float>& y) {
  Rng rng(seed);
  s.resize(static_cast<std::size_t>(n));
  y.resize(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double u = rng.uniform();
    float v = static_cast<float>(std::round(rng.normal() * 4.0) / 4.0);
    if (u < 0.05) v = rng.uniform() < 0.5 ? -0.0f : 0.0f;
    else if (u < 0.07) v = static_cast<float>(rng.normal() * 1e30);
    s[static_cast<std::size_t>(i)] = v;
    y[static_cast<std::size_t>(i)] = rng.uniform() < positive_rate ? 1.0f : 0.0f;
  }
}

TEST(AucKernel, MatchesTheCpuAucWithTies) {
  HETREC_REQUIRE_GPU();
  std::vector<float> s, y;
  for (int64_t n : {int64_t{2}, int64_t{1000}, int64_t{4097}, int64_t{300001}}) {
    for (double rate : {0.3, 0.02}) {
      random_case(n, static_cast<uint64_t>(n) * 7 + static_cast<uint64_t>(rate * 100), rate, s, y);
      y[0] = 1.0f;  // both classes present
      y[1] = 0.0f;
      const double gpu = device_auc(s, y), cpu = roc_auc(s, y);
      EXPECT_NEAR(gpu, cpu, 1e-12) << "n=" << n << " rate " << rate;
      if (n <= 4097) {
        EXPECT_NEAR(gpu, brute_force_auc(s, y), 1e-12) << "n=" << n;
      }
    }
  }
  // Every score tied: 0.5. One class only: NaN, as on the CPU.
  std::vector<float> unused;
  random_case(500, 3, 0.5, unused, y);
  s.assign(500, 1.5f);
  y[0] = 1.0f;
  y[1] = 0.0f;
  EXPECT_DOUBLE_EQ(device_auc(s, y), 0.5);
  y.assign(500, 1.0f);
  EXPECT_TRUE(std::isnan(device_auc(s, y)));
  EXPECT_TRUE(std::isnan(roc_auc(s, y)));
  // Perfect and reversed ranking.
  s = {0.1f, 0.2f, 0.3f, 0.4f};
  y = {0.0f, 0.0f, 1.0f, 1.0f};
  EXPECT_DOUBLE_EQ(device_auc(s, y), 1.0);
  y = {1.0f, 1.0f, 0.0f, 0.0f};
  EXPECT_DOUBLE_EQ(device_auc(s, y), 0.0);
}

TEST(AucKernel, GpuModelComputesEvaluationAucOnTheDevice) {
  HETREC_REQUIRE_GPU();
  ModelConfig m;
  m.arch = Arch::dlrm;
  m.num_dense = 4;
  m.embedding_dim = 8;
  m.tables = {TableConfig{"a", 100, 1, false, Pooling::sum}};
  m.bottom_mlp = {8};
  m.top_mlp = {8, 1};
  auto gpu = make_gpu_model(m, OptimConfig{});
  std::vector<float> s, y;
  random_case(77777, 11, 0.25, s, y);
  y[0] = 1.0f;
  y[1] = 0.0f;
  const std::optional<double> a = gpu->device_roc_auc(s, y);
  ASSERT_TRUE(a.has_value());
  EXPECT_NEAR(*a, roc_auc(s, y), 1e-12);
}

}  // namespace
}  // namespace hetrec
