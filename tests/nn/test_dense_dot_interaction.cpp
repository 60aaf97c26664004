// DLRM dot interaction: output order and values against a plain double reference,
// gradients against central differences.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "dense_test_support.h"
#include "model/model_config.h"
#include "nn/dot_interaction.h"

namespace hetrec {
namespace {

using testing::check_gradient;
using testing::random_vector;
using testing::weighted_sum;

// The DLRM reference's index lists: li = [i for i in range(F) for j in range(i + offset)],
// lj = [j for i in range(F) for j in range(i + offset)], offset = 1 with self terms.
std::vector<std::pair<int, int>> reference_pairs(int f, bool self) {
  std::vector<std::pair<int, int>> p;
  const int offset = self ? 1 : 0;
  for (int i = 0; i < f; ++i)
    for (int j = 0; j < i + offset; ++j) p.emplace_back(i, j);
  return p;
}

std::vector<double> reference_forward(const std::vector<double>& dense, const std::vector<double>& sparse,
                                      int64_t batch, int tables, int dim, bool self) {
  const auto pairs = reference_pairs(tables + 1, self);
  const int64_t width = dim + static_cast<int64_t>(pairs.size());
  std::vector<double> out(static_cast<std::size_t>(batch * width));
  for (int64_t b = 0; b < batch; ++b) {
    // Features: T = cat([x] + ly) per sample.
    std::vector<std::vector<double>> feat(static_cast<std::size_t>(tables + 1), std::vector<double>(dim));
    for (int k = 0; k < dim; ++k) feat[0][k] = dense[b * dim + k];
    for (int t = 0; t < tables; ++t)
      for (int k = 0; k < dim; ++k) feat[static_cast<std::size_t>(t + 1)][k] = sparse[(b * tables + t) * dim + k];
    for (int k = 0; k < dim; ++k) out[b * width + k] = feat[0][k];
    for (std::size_t p = 0; p < pairs.size(); ++p) {
      double dot = 0;
      for (int k = 0; k < dim; ++k) dot += feat[pairs[p].first][k] * feat[pairs[p].second][k];
      out[b * width + dim + static_cast<int64_t>(p)] = dot;
    }
  }
  return out;
}

TEST(DotInteraction, PairOrderIsRowMajorLowerTriangle) {
  DotInteraction<float> strict(2, 4, false);
  ASSERT_EQ(strict.num_pairs(), 3);
  EXPECT_EQ(strict.pair(0), std::make_pair(1, 0));
  EXPECT_EQ(strict.pair(1), std::make_pair(2, 0));
  EXPECT_EQ(strict.pair(2), std::make_pair(2, 1));
  DotInteraction<float> with_self(2, 4, true);
  const std::vector<std::pair<int, int>> want{{0, 0}, {1, 0}, {1, 1}, {2, 0}, {2, 1}, {2, 2}};
  ASSERT_EQ(with_self.num_pairs(), 6);
  for (int p = 0; p < 6; ++p) EXPECT_EQ(with_self.pair(p), want[static_cast<std::size_t>(p)]);
}

TEST(DotInteraction, WidthMatchesModelConfig) {
  for (bool self : {false, true}) {
    ModelConfig cfg;
    cfg.arch = Arch::dlrm;
    cfg.embedding_dim = 8;
    cfg.interaction_self = self;
    cfg.tables.resize(26);
    DotInteraction<float> dot(26, 8, self);
    EXPECT_EQ(dot.output_width(), cfg.interaction_width());
  }
}

template <class T>
void check_forward(bool self, double tol) {
  const int64_t batch = 7;
  const int tables = 4, dim = 6;
  DotInteraction<T> dot(tables, dim, self);
  const auto dense = random_vector<T>(batch * dim, 61);
  const auto sparse = random_vector<T>(batch * tables * dim, 62);
  auto out = testing::poisoned<T>(batch * dot.output_width());
  dot.forward(dense.data(), sparse.data(), batch, out.data());
  const auto ref = reference_forward(std::vector<double>(dense.begin(), dense.end()),
                                     std::vector<double>(sparse.begin(), sparse.end()), batch, tables, dim, self);
  ASSERT_EQ(ref.size(), out.size());
  for (std::size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(out[i], ref[i], tol * (1 + std::abs(ref[i]))) << i;
}

TEST(DotInteraction, ForwardMatchesReference) {
  for (bool self : {false, true}) {
    check_forward<double>(self, 1e-13);
    check_forward<float>(self, 1e-5);
  }
}

void check_gradients(bool self) {
  const int64_t batch = 3;
  const int tables = 3, dim = 4;
  DotInteraction<double> dot(tables, dim, self);
  auto dense = random_vector<double>(batch * dim, 71);
  auto sparse = random_vector<double>(batch * tables * dim, 72);
  const auto weights = random_vector<double>(batch * dot.output_width(), 73);
  std::vector<double> out(weights.size());
  auto loss = [&] {
    dot.forward(dense.data(), sparse.data(), batch, out.data());
    return weighted_sum(out.data(), weights);
  };
  auto ddense = testing::poisoned<double>(batch * dim);
  auto dsparse = testing::poisoned<double>(batch * tables * dim);
  dot.backward(dense.data(), sparse.data(), weights.data(), batch, ddense.data(), dsparse.data());
  check_gradient("ddense", dense.data(), ddense.data(), batch * dim, loss);
  check_gradient("dsparse", sparse.data(), dsparse.data(), batch * tables * dim, loss);
}

// A batch large enough for the parallel loops gives, sample by sample, what the serial
// path gives for that sample alone.
TEST(DotInteraction, LargeBatchMatchesSingleSamples) {
  const int64_t batch = 1500;  // batch x pairs x dim > kParallelMinElements
  const int tables = 4, dim = 6;
  DotInteraction<float> dot(tables, dim, true);
  const int64_t w = dot.output_width();
  const auto dense = random_vector<float>(batch * dim, 65);
  const auto sparse = random_vector<float>(batch * tables * dim, 66);
  const auto dout = random_vector<float>(batch * w, 67);
  auto out = testing::poisoned<float>(batch * w);
  auto ddense = testing::poisoned<float>(batch * dim);
  auto dsparse = testing::poisoned<float>(batch * tables * dim);
  dot.forward(dense.data(), sparse.data(), batch, out.data());
  dot.backward(dense.data(), sparse.data(), dout.data(), batch, ddense.data(), dsparse.data());
  std::vector<float> o1(static_cast<std::size_t>(w)), gd1(dim), gs1(static_cast<std::size_t>(tables * dim));
  for (int64_t b = 0; b < batch; b += 97) {
    const float* d1 = dense.data() + b * dim;
    const float* s1 = sparse.data() + b * tables * dim;
    dot.forward(d1, s1, 1, o1.data());
    dot.backward(d1, s1, dout.data() + b * w, 1, gd1.data(), gs1.data());
    for (int64_t k = 0; k < w; ++k) ASSERT_EQ(out[b * w + k], o1[k]) << b;
    for (int k = 0; k < dim; ++k) ASSERT_EQ(ddense[b * dim + k], gd1[k]) << b;
    for (int k = 0; k < tables * dim; ++k) ASSERT_EQ(dsparse[b * tables * dim + k], gs1[k]) << b;
  }
}

TEST(DotInteraction, GradientsMatchFiniteDifferencesWithoutSelf) { check_gradients(false); }
TEST(DotInteraction, GradientsMatchFiniteDifferencesWithSelf) { check_gradients(true); }

}  // namespace
}  // namespace hetrec
