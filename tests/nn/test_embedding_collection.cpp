// The embedding collection: the forward pass against a double-precision reference, config
// errors, initialisation and state (the backward and optimizers: test_embedding_backward.cpp).
#include <gtest/gtest.h>

#include "embedding_test_support.h"

using namespace hetrec;
using namespace hetrec::embedding_test;


// ---------------------------------------------------------------------------- forward

class EmbeddingForward : public ::testing::TestWithParam<DType> {};

TEST_P(EmbeddingForward, MatchesDoubleReference) {
  const ModelConfig m = make_model(13, mixed_tables(), GetParam());
  EmbeddingCollection emb(m.embedding_spec(), make_optim(OptimizerKind::sgd), 7);
  Rng rng(21);
  const int64_t batch_size = 37;
  const Batch batch = random_batch(m, batch_size, rng);
  std::vector<std::vector<double>> weights;
  for (int t = 0; t < m.num_tables(); ++t) {
    const std::vector<float> w = table_weights(emb, t);
    weights.emplace_back(w.begin(), w.end());
  }
  std::vector<float> pooled(static_cast<std::size_t>(batch_size * m.num_tables() * m.embedding_dim),
                            std::numeric_limits<float>::quiet_NaN());
  emb.forward(batch, pooled.data());
  const std::vector<double> ref = reference_pooled(m, weights, batch);
  // Each pooled value sums at most 2*12-1 rows of magnitude <= 1/sqrt(rows) <= 1.
  for (std::size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(pooled[i], ref[i], 1e-5) << "pooled element " << i;
  // The empty bag of the last sample in variable tables pools to exact zeros.
  const int64_t last = batch_size - 1;
  for (int d = 0; d < m.embedding_dim; ++d)
    EXPECT_EQ(pooled[static_cast<std::size_t>((last * m.num_tables() + 1) * m.embedding_dim + d)], 0.0f);
}

INSTANTIATE_TEST_SUITE_P(RowDtypes, EmbeddingForward, ::testing::Values(DType::f32, DType::f16, DType::bf16),
                         [](const auto& param_info) { return std::string(dtype_name(param_info.param)); });

// Every fp16 bit pattern stored in a table reads back as core/dtype.h decodes it.
TEST(EmbeddingForward, Fp16RowsDecodeEveryBitPattern) {
  const int dim = 16;
  const ModelConfig m = make_model(dim, {{"all", 65536 / dim, 1, false, Pooling::sum}}, DType::f16);
  EmbeddingCollection emb(m.embedding_spec(), make_optim(OptimizerKind::sgd), 1);
  Tensor weight = find_state(emb, "embedding.all.weight");
  for (uint32_t i = 0; i < 65536; ++i) weight.data<uint16_t>()[i] = static_cast<uint16_t>(i);
  Batch batch;
  batch.reset(m.tables[0].rows, 1, 1);
  for (int64_t b = 0; b < batch.size; ++b) {
    batch.ids.push_back(static_cast<int32_t>(b));
    batch.offsets[static_cast<std::size_t>(b + 1)] = static_cast<int32_t>(b + 1);
  }
  std::vector<float> pooled(65536, -12345.0f);
  emb.forward(batch, pooled.data());
  for (uint32_t i = 0; i < 65536; ++i) {
    const float expect = f16_to_f32(static_cast<uint16_t>(i));
    if (std::isnan(expect))
      ASSERT_TRUE(std::isnan(pooled[i])) << "pattern " << i;
    else
      ASSERT_EQ(pooled[i], expect) << "pattern " << i;  // 0 + -0 is +0, which compares equal
  }
}

TEST(EmbeddingForward, OutOfRangeIdNamesTableSampleAndId) {
  const ModelConfig m = make_model(4, {{"users", 10, 2, false, Pooling::sum}, {"items", 6, 2, false, Pooling::mean}});
  EmbeddingCollection emb(m.embedding_spec(), make_optim(OptimizerKind::sgd), 3);
  Rng rng(5);
  std::vector<float> pooled(5 * 2 * 4);
  for (const int32_t bad : {6, -1, 1 << 30}) {
    Batch batch = random_batch(m, 5, rng, 100);
    batch.ids[static_cast<std::size_t>(batch.bag_begin(1, 3) + 1)] = bad;  // table "items", sample 3
    for (int pass = 0; pass < 2; ++pass) {
      try {
        if (pass == 0)
          emb.forward(batch, pooled.data());
        else
          emb.backward_update(batch, pooled.data(), 0.1f, 0);
        FAIL() << "id " << bad << " accepted";
      } catch (const DataError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("\"items\""), std::string::npos) << msg;
        EXPECT_NE(msg.find("sample 3 "), std::string::npos) << msg;
        EXPECT_NE(msg.find("sample 103"), std::string::npos) << msg;
        EXPECT_NE(msg.find("id " + std::to_string(bad)), std::string::npos) << msg;
        EXPECT_NE(msg.find("[0, 6)"), std::string::npos) << msg;
      }
    }
  }
  Batch wrong_tables;
  wrong_tables.reset(5, 1, 3);
  EXPECT_THROW(emb.forward(wrong_tables, pooled.data()), DataError);
  Batch bad_offsets = random_batch(m, 5, rng);
  bad_offsets.offsets[4] = bad_offsets.offsets[3] - 1;
  EXPECT_THROW(emb.forward(bad_offsets, pooled.data()), DataError);
}

TEST(EmbeddingCollection, ConfigErrorsNameTheKey) {
  const auto message = [](const ModelConfig& m, const OptimConfig& o) -> std::string {
    try {
      EmbeddingCollection emb(m.embedding_spec(), o, 1);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message(make_model(4, {{"t", 5, 1, false, Pooling::sum}}, DType::f8e4m3), make_optim(OptimizerKind::sgd))
                .find("model.row_dtype"),
            std::string::npos);
  EXPECT_NE(message(make_model(4, {{"t", 5, 1, false, Pooling::sum}}), make_optim(OptimizerKind::adam)).find("optim.sparse"),
            std::string::npos);
  EXPECT_NE(message(make_model(4, {{"t", 0, 1, false, Pooling::sum}}), make_optim(OptimizerKind::sgd)).find("model.tables[0].rows"),
            std::string::npos);
  EXPECT_NE(message(make_model(0, {{"t", 5, 1, false, Pooling::sum}}), make_optim(OptimizerKind::sgd)).find("model.embedding_dim"),
            std::string::npos);
}

// ---------------------------------------------------------------------------- init and state

TEST(EmbeddingCollection, InitIsUniformSeededAndSharedAcrossRowDtypes) {
  const std::vector<TableSpec> specs = {{"big", 20000, 1, false, Pooling::sum}, {"small", 9, 1, false, Pooling::sum}};
  const ModelConfig m = make_model(8, specs);
  EmbeddingCollection emb(m.embedding_spec(), make_optim(OptimizerKind::sgd), 42);
  const std::vector<float> w = table_weights(emb, 0);
  const double bound = 1.0 / std::sqrt(20000.0);
  double sum = 0.0, sum_sq = 0.0;
  for (float x : w) {
    ASSERT_LE(std::fabs(x), bound);
    sum += x;
    sum_sq += static_cast<double>(x) * x;
  }
  const double n = static_cast<double>(w.size());
  const double variance = bound * bound / 3.0;  // of uniform(-bound, bound)
  EXPECT_LT(std::fabs(sum / n), 5.0 * std::sqrt(variance / n));
  EXPECT_NEAR(sum_sq / n, variance, 0.02 * variance);

  EmbeddingCollection same(m.embedding_spec(), make_optim(OptimizerKind::sgd), 42);
  EXPECT_EQ(table_weights(same, 0), w);
  EXPECT_EQ(table_weights(same, 1), table_weights(emb, 1));
  EmbeddingCollection other(m.embedding_spec(), make_optim(OptimizerKind::sgd), 43);
  EXPECT_NE(table_weights(other, 0), w);
  EXPECT_NE(table_weights(emb, 1), std::vector<float>(w.begin(), w.begin() + 9 * 8));  // tables draw apart

  // 16-bit tables hold the fp32 initial values rounded to nearest.
  for (DType dt : {DType::f16, DType::bf16}) {
    EmbeddingCollection narrow(make_model(8, specs, dt).embedding_spec(), make_optim(OptimizerKind::sgd), 42);
    const Tensor t = find_state(narrow, "embedding.big.weight");
    for (std::size_t i = 0; i < w.size(); ++i) {
      const uint16_t expect = dt == DType::f16 ? f32_to_f16(w[i]) : f32_to_bf16(w[i]);
      ASSERT_EQ(t.data<uint16_t>()[i], expect) << dtype_name(dt) << " element " << i;
    }
  }
}

TEST(EmbeddingCollection, StateNamesShapesAndAccumulatorInit) {
  const std::vector<TableSpec> specs = {{"u", 11, 1, false, Pooling::sum}, {"v", 5, 1, false, Pooling::sum}};
  {
    EmbeddingCollection emb(make_model(6, specs).embedding_spec(), make_optim(OptimizerKind::sgd), 1);
    const auto st = emb.state();
    ASSERT_EQ(st.size(), 2u);
    EXPECT_EQ(st[0].name, "embedding.u.weight");
    EXPECT_EQ(st[0].tensor.shape(), (std::vector<int64_t>{11, 6}));
    EXPECT_EQ(st[1].name, "embedding.v.weight");
  }
  {
    EmbeddingCollection emb(make_model(6, specs, DType::bf16).embedding_spec(), make_optim(OptimizerKind::adagrad, 1e-8, 0.25), 1);
    const auto st = emb.state();
    ASSERT_EQ(st.size(), 4u);
    EXPECT_EQ(st[0].tensor.dtype(), DType::bf16);
    EXPECT_EQ(st[1].name, "embedding.u.accumulator");
    EXPECT_EQ(st[1].tensor.shape(), (std::vector<int64_t>{11, 6}));
    EXPECT_EQ(st[1].tensor.dtype(), DType::f32);
    for (float a : as_floats(st[3].tensor)) EXPECT_EQ(a, 0.25f);
  }
  {
    EmbeddingCollection emb(make_model(6, specs).embedding_spec(), make_optim(OptimizerKind::rowwise_adagrad, 1e-8, 0.5), 1);
    const auto st = emb.state();
    ASSERT_EQ(st.size(), 4u);
    EXPECT_EQ(st[3].name, "embedding.v.accumulator");
    EXPECT_EQ(st[3].tensor.shape(), (std::vector<int64_t>{5}));
    for (float a : as_floats(st[3].tensor)) EXPECT_EQ(a, 0.5f);
  }
}
