#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "core/error.h"
#include "data/synthetic.h"
#include "data_test_util.h"

using namespace hetrec;
using hetrec::testing::FlatSample;
using hetrec::testing::flatten;
using hetrec::testing::read_all;
using hetrec::testing::small_model;

namespace {

SyntheticConfig small_config(int64_t train = 3000, int64_t eval = 1000) {
  SyntheticConfig c;
  c.train_samples = train;
  c.eval_samples = eval;
  c.seed = 11;
  return c;
}

}  // namespace

TEST(SyntheticSource, SameSeedSameBatchesWhateverBatchingAndThreads) {
  const ModelConfig model = small_model();
  SyntheticSource a(model, small_config(), Split::train, 1);
  SyntheticSource b(model, small_config(), Split::train, 2);
  const auto sa = read_all(a, 64);
  const auto sb = read_all(b, 100);
  ASSERT_EQ(sa.size(), 3000u);
  ASSERT_EQ(sa, sb);
  SyntheticConfig other = small_config();
  other.seed = 12;
  SyntheticSource c(model, other, Split::train, 2);
  const auto sc = read_all(c, 100);
  int same_labels_and_dense = 0;
  for (std::size_t i = 0; i < sa.size(); ++i) same_labels_and_dense += sa[i].dense == sc[i].dense;
  EXPECT_EQ(same_labels_and_dense, 0);
}

TEST(SyntheticSource, SeekEqualsSequentialAndMatchesPerSampleGeneration) {
  const ModelConfig model = small_model();
  SyntheticSource source(model, small_config(), Split::eval, 2);
  const auto all = read_all(source, 128);
  ASSERT_EQ(all.size(), 1000u);
  EXPECT_FALSE([&] { Batch b; return source.next(b, 10); }());
  source.seek(437);
  EXPECT_EQ(source.position(), 437);
  Batch batch;
  // Poison the buffers: every element must be rewritten.
  batch.dense.assign(10000, std::numeric_limits<float>::quiet_NaN());
  batch.ids.assign(10000, -1);
  ASSERT_TRUE(source.next(batch, 100));
  EXPECT_EQ(batch.first_sample, 437);
  std::vector<FlatSample> part;
  flatten(batch, part);
  for (std::size_t k = 0; k < part.size(); ++k) EXPECT_EQ(part[k], all[437 + k]);
  // The per-sample path (a different code path: no batch layout) agrees everywhere.
  SyntheticSample s;
  for (int64_t i : {0, 1, 437, 999}) {
    source.sample(i, s);
    const FlatSample& f = all[static_cast<std::size_t>(i)];
    EXPECT_EQ(s.dense, f.dense);
    EXPECT_EQ(s.label, f.label);
    std::size_t at = 0;
    for (std::size_t t = 0; t < f.bags.size(); ++t) {
      ASSERT_EQ(s.lengths[t], static_cast<int32_t>(f.bags[t].size()));
      EXPECT_TRUE(std::equal(f.bags[t].begin(), f.bags[t].end(), s.ids.begin() + static_cast<std::ptrdiff_t>(at)));
      at += f.bags[t].size();
    }
  }
  EXPECT_THROW(source.seek(1001), DataError);
  EXPECT_THROW(source.seek(-1), DataError);
}

TEST(SyntheticSource, EndsWithAPartialBatch) {
  SyntheticSource source(small_model(), small_config(250, 10), Split::train);
  Batch batch;
  std::vector<int64_t> sizes;
  while (source.next(batch, 100)) sizes.push_back(batch.size);
  EXPECT_EQ(sizes, (std::vector<int64_t>{100, 100, 50}));
  EXPECT_EQ(source.position(), 250);
  EXPECT_EQ(source.counters().samples, 250);
  EXPECT_EQ(source.size_hint(), 250);
}

TEST(SyntheticSource, IdsInRangeAndBagSizes) {
  const ModelConfig model = small_model();
  SyntheticSource source(model, small_config(), Split::train, 2);
  const auto all = read_all(source, 256);
  std::map<std::size_t, int> variable_lengths;
  double variable_total = 0.0;
  for (const FlatSample& s : all) {
    for (std::size_t t = 0; t < model.tables.size(); ++t) {
      const TableConfig& table = model.tables[t];
      for (int32_t id : s.bags[t]) {
        ASSERT_GE(id, 0);
        ASSERT_LT(id, table.rows);
      }
      if (table.variable_bags) {
        ASSERT_GE(s.bags[t].size(), 1u);
        ASSERT_LE(s.bags[t].size(), static_cast<std::size_t>(2 * table.hotness - 1));
        ++variable_lengths[s.bags[t].size()];
        variable_total += static_cast<double>(s.bags[t].size());
      } else {
        ASSERT_EQ(s.bags[t].size(), static_cast<std::size_t>(table.hotness));
      }
    }
    for (float x : s.dense) {
      ASSERT_TRUE(std::isfinite(x));
      ASSERT_GE(x, 0.0f);
      // log(count + 1) of an integer count.
      const double count = std::expm1(static_cast<double>(x));
      EXPECT_NEAR(count, std::round(count), 1e-5 * (1.0 + count));
    }
  }
  // Hotness 3, variable: lengths uniform on 1..5 with mean 3.
  EXPECT_EQ(variable_lengths.size(), 5u);
  for (const auto& [len, count] : variable_lengths) EXPECT_NEAR(count / 3000.0, 0.2, 0.035) << "length " << len;
  EXPECT_NEAR(variable_total / 3000.0, 3.0, 0.1);
  // The 40M-row table is sampled over its whole range, not only a prefix.
  int32_t max_id = 0;
  for (const FlatSample& s : all) for (int32_t id : s.bags[1]) max_id = std::max(max_id, id);
  EXPECT_GT(max_id, 20000000);
}

TEST(SyntheticSource, ZipfSkewWithScrambledHotRows) {
  ModelConfig model;
  model.num_dense = 1;
  model.tables = {hetrec::testing::table("zipf", 1000, 4)};
  SyntheticConfig config = small_config(5000, 10);
  config.zipf_exponent = 1.05;
  SyntheticSource source(model, config, Split::train, 2);
  std::vector<int> counts(1000, 0);
  for (const FlatSample& s : read_all(source, 500))
    for (int32_t id : s.bags[0]) ++counts[static_cast<std::size_t>(id)];
  std::vector<int> sorted = counts;
  std::sort(sorted.rbegin(), sorted.rend());
  double norm = 0.0;
  for (int r = 1; r <= 1000; ++r) norm += std::pow(r, -1.05);
  const double draws = 20000.0;
  // The hottest row gets P(rank 1) = 1/H(1000, 1.05) of the draws; the 100th about 100^-1.05 of that.
  EXPECT_NEAR(sorted[0] / draws, 1.0 / norm, 5.0 * std::sqrt(1.0 / norm / draws));
  EXPECT_GT(sorted[0], 50 * std::max(sorted[99], 1) / 2);
  // Hot rows are scattered over the table, not rows 0, 1, 2, ...
  std::vector<int> order(1000);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return counts[static_cast<std::size_t>(a)] > counts[static_cast<std::size_t>(b)]; });
  int hot_in_prefix = 0;
  for (int k = 0; k < 10; ++k) hot_in_prefix += order[static_cast<std::size_t>(k)] < 10;
  EXPECT_LT(hot_in_prefix, 3);
}

TEST(SyntheticSource, LabelsFollowTheTeacherProbability) {
  const ModelConfig model = small_model();
  SyntheticSource source(model, small_config(20000, 10), Split::train, 2);
  std::vector<double> p(20000);
  source.teacher_probabilities(0, 20000, p.data());
  const auto all = read_all(source, 1000);
  double label_sum = 0.0, p_sum = 0.0, var = 0.0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    label_sum += all[i].label;
    p_sum += p[i];
    var += p[i] * (1.0 - p[i]);
    ASSERT_TRUE(all[i].label == 0.0f || all[i].label == 1.0f);
  }
  EXPECT_NEAR(label_sum, p_sum, 5.0 * std::sqrt(var));
  // Calibration within bins of p: the observed rate tracks p.
  for (double lo : {0.0, 0.2, 0.4, 0.6, 0.8}) {
    double y = 0.0, expected = 0.0, v = 0.0;
    int n = 0;
    for (std::size_t i = 0; i < all.size(); ++i)
      if (p[i] >= lo && p[i] < lo + 0.2) {
        y += all[i].label;
        expected += p[i];
        v += p[i] * (1 - p[i]);
        ++n;
      }
    if (n > 100) {
      EXPECT_NEAR(y, expected, 5.0 * std::sqrt(v) + 1.0) << "bin " << lo;
    }
  }
  EXPECT_GT(p_sum / 20000.0, 0.2);
  EXPECT_LT(p_sum / 20000.0, 0.5);
}

// Recomputes sample i's logit in double from the batch contents and the teacher's
// published parameters, by the formula documented in data/teacher.h.
static double reference_logit(const Teacher& teacher, const ModelConfig& model, const SyntheticConfig& config,
                              const FlatSample& s) {
  const int k = teacher.dim();
  const int f = model.num_tables() + 1;
  std::vector<std::vector<double>> feature(static_cast<std::size_t>(f), std::vector<double>(static_cast<std::size_t>(k), 0.0));
  double linear = 0.0;
  for (int j = 0; j < model.num_dense; ++j) linear += teacher.dense_weight(j) * static_cast<double>(s.dense[static_cast<std::size_t>(j)]);
  for (int r = 0; r < k; ++r) {
    double acc = 0.0;
    for (int j = 0; j < model.num_dense; ++j) acc += teacher.dense_projection(r, j) * static_cast<double>(s.dense[static_cast<std::size_t>(j)]);
    feature[0][static_cast<std::size_t>(r)] = acc / std::sqrt(static_cast<double>(model.num_dense));
  }
  std::vector<double> w(static_cast<std::size_t>(k));
  for (int t = 0; t < model.num_tables(); ++t) {
    const TableConfig& table = model.tables[static_cast<std::size_t>(t)];
    const auto& bag = s.bags[static_cast<std::size_t>(t)];
    for (int32_t id : bag) {
      teacher.row_vector(t, id, w.data());
      for (int r = 0; r < k; ++r) {
        EXPECT_LE(std::abs(w[static_cast<std::size_t>(r)]), std::sqrt(3.0));
        feature[static_cast<std::size_t>(t + 1)][static_cast<std::size_t>(r)] += w[static_cast<std::size_t>(r)];
      }
    }
    const double scale = table.pooling == Pooling::sum ? 1.0 / std::sqrt(static_cast<double>(table.hotness))
                                                       : std::sqrt(static_cast<double>(table.hotness)) / static_cast<double>(bag.size());
    for (double& v : feature[static_cast<std::size_t>(t + 1)]) v *= scale;
  }
  double pairs = 0.0;
  for (int a = 0; a < f; ++a)
    for (int b = a + 1; b < f; ++b) {
      double dot = 0.0;
      for (int r = 0; r < k; ++r) dot += feature[static_cast<std::size_t>(a)][static_cast<std::size_t>(r)] * feature[static_cast<std::size_t>(b)][static_cast<std::size_t>(r)];
      pairs += teacher.pair_weight(a, b) * dot;
    }
  pairs /= std::sqrt(static_cast<double>(k));
  const Teacher::Normalisation& n = teacher.normalisation();
  const double informative = std::sqrt(Teacher::kLinearShare) * (linear - n.linear_mean) / n.linear_std +
                             std::sqrt(1.0 - Teacher::kLinearShare) * (pairs - n.pairs_mean) / n.pairs_std;
  return Teacher::kLogitBias + config.teacher_scale * Teacher::kLogitSpread * informative;
}

TEST(SyntheticSource, TeacherLogitIsTheDocumentedFunctionOfTheDeliveredFeatures) {
  const ModelConfig model = small_model();
  SyntheticConfig config = small_config(200, 10);
  config.teacher_dim = 3;
  config.teacher_scale = 1.3;
  SyntheticSource source(model, config, Split::train, 2);
  const auto all = read_all(source, 64);
  for (const FlatSample& s : all) {
    const double expected = reference_logit(source.teacher(), model, config, s);
    const double got = source.teacher_logit(s.index);
    ASSERT_NEAR(got, expected, 1e-9 * (1.0 + std::abs(expected))) << "sample " << s.index;
  }
}

TEST(SyntheticSource, LogitSpreadIsNormalisedAndScales) {
  const ModelConfig model = small_model(13);
  auto logit_std = [&](double scale) {
    SyntheticConfig config = small_config(10, 4096);
    config.teacher_scale = scale;
    SyntheticSource source(model, config, Split::eval, 2);
    double sum = 0.0, sq = 0.0;
    for (int64_t i = 0; i < 4096; ++i) {
      const double z = source.teacher_logit(i) - Teacher::kLogitBias;
      sum += z;
      sq += z * z;
    }
    const double mean = sum / 4096.0;
    EXPECT_NEAR(mean, 0.0, 0.15 * std::max(scale, 0.1));
    return std::sqrt(sq / 4096.0 - mean * mean);
  };
  EXPECT_NEAR(logit_std(1.0), Teacher::kLogitSpread, 0.15);
  EXPECT_NEAR(logit_std(2.0), 2.0 * Teacher::kLogitSpread, 0.3);
  EXPECT_NEAR(logit_std(0.0), 0.0, 1e-12);
}

TEST(SyntheticSource, TrainAndEvalShareTheTeacherNotTheSamples) {
  const ModelConfig model = small_model();
  SyntheticSource train(model, small_config(), Split::train);
  SyntheticSource eval(model, small_config(), Split::eval);
  std::vector<double> a(static_cast<std::size_t>(train.teacher().dim())), b(a.size());
  train.teacher().row_vector(1, 123456, a.data());
  eval.teacher().row_vector(1, 123456, b.data());
  EXPECT_EQ(a, b);
  const auto& na = train.teacher().normalisation();
  const auto& nb = eval.teacher().normalisation();
  EXPECT_EQ(na.pairs_std, nb.pairs_std);
  EXPECT_EQ(na.linear_mean, nb.linear_mean);
  int same = 0;
  for (int64_t i = 0; i < 100; ++i) same += train.teacher_logit(i) == eval.teacher_logit(i);
  EXPECT_EQ(same, 0);
}

TEST(SyntheticSource, LabelFlipEntersTheProbability) {
  const ModelConfig model = small_model();
  SyntheticConfig config = small_config();
  config.label_flip = 0.5;
  SyntheticSource noisy(model, config, Split::train);
  for (int64_t i = 0; i < 20; ++i) EXPECT_DOUBLE_EQ(noisy.teacher_probability(i), 0.5);
  config.label_flip = 0.1;
  SyntheticSource some(model, config, Split::train);
  SyntheticSource none(model, small_config(), Split::train);
  for (int64_t i = 0; i < 20; ++i) {
    const double p = none.teacher_probability(i);
    EXPECT_NEAR(some.teacher_probability(i), 0.9 * p + 0.1 * (1.0 - p), 1e-12);
    EXPECT_NEAR(p, 1.0 / (1.0 + std::exp(-none.teacher_logit(i))), 1e-12);
  }
}

TEST(SyntheticSource, ConfigErrorsNameTheKey) {
  auto message = [](const ModelConfig& m, const SyntheticConfig& c, int threads = 1) -> std::string {
    try {
      SyntheticSource s(m, c, Split::train, threads);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  SyntheticConfig c = small_config();
  c.zipf_exponent = -1.0;
  EXPECT_NE(message(small_model(), c).find("data.synthetic.zipf_exponent"), std::string::npos);
  c = small_config();
  c.label_flip = 1.5;
  EXPECT_NE(message(small_model(), c).find("data.synthetic.label_flip"), std::string::npos);
  c = small_config();
  c.teacher_dim = 0;
  EXPECT_NE(message(small_model(), c).find("data.synthetic.teacher_dim"), std::string::npos);
  ModelConfig m = small_model();
  m.tables[2].rows = 0;
  EXPECT_NE(message(m, small_config()).find("model.tables[2] (t2).rows"), std::string::npos);
  m = small_model();
  m.tables[0].hotness = 0;
  EXPECT_NE(message(m, small_config()).find("hotness"), std::string::npos);
  EXPECT_NE(message(small_model(), small_config(), 0).find("data.reader_threads"), std::string::npos);
}

TEST(SyntheticSource, NoDenseOrNoTablesStillWorks) {
  ModelConfig dense_only;
  dense_only.num_dense = 4;
  SyntheticSource a(dense_only, small_config(), Split::train);
  Batch batch;
  ASSERT_TRUE(a.next(batch, 10));
  EXPECT_EQ(batch.offsets.size(), 1u);
  EXPECT_TRUE(std::isfinite(a.teacher_logit(3)));
  ModelConfig tables_only = small_model(0);
  SyntheticSource b(tables_only, small_config(), Split::train);
  ASSERT_TRUE(b.next(batch, 10));
  EXPECT_TRUE(batch.dense.empty());
  EXPECT_GT(b.teacher().normalisation().pairs_std, 0.0);
}
