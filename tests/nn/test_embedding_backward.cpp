// The embedding collection's backward and sparse optimizers: finite differences, hand-computed
// updates, 16-bit rows and thread-count determinism (the forward: test_embedding_collection.cpp).
#include <gtest/gtest.h>

#include "embedding_test_support.h"

using namespace hetrec;
using namespace hetrec::embedding_test;

// ---------------------------------------------------------------------------- backward

// With SGD and lr = 1 each row moves by minus the gradient of L = sum(pooled * G), which
// is taken here by central finite differences of a double-precision forward.
TEST(EmbeddingBackward, SgdStepIsMinusFiniteDifferenceGradient) {
  const std::vector<TableSpec> specs = {{"a", 6, 3, false, Pooling::sum},
                                        {"b", 9, 3, true, Pooling::mean},
                                        {"c", 4, 2, true, Pooling::sum},
                                        {"d", 5, 2, false, Pooling::mean}};
  const ModelConfig m = make_model(5, specs);
  EmbeddingCollection emb(m.embedding_spec(), make_optim(OptimizerKind::sgd), 9);
  Rng rng(31);
  const int64_t batch_size = 8;
  const Batch batch = random_batch(m, batch_size, rng);
  // The data must exercise duplicates within a bag and across bags in every table.
  for (int t = 0; t < m.num_tables(); ++t) {
    EXPECT_EQ(batch.ids[static_cast<std::size_t>(batch.bag_begin(t, 0))], batch.ids[static_cast<std::size_t>(batch.bag_begin(t, 0) + 1)]);
    EXPECT_EQ(batch.ids[static_cast<std::size_t>(batch.bag_begin(t, 0))], batch.ids[static_cast<std::size_t>(batch.bag_begin(t, 1))]);
  }
  const std::vector<float> grad = random_grad(m, batch_size, rng);

  std::vector<std::vector<double>> weights;
  for (int t = 0; t < m.num_tables(); ++t) {
    const std::vector<float> w = table_weights(emb, t);
    weights.emplace_back(w.begin(), w.end());
  }
  const auto loss = [&](const std::vector<std::vector<double>>& w) {
    const std::vector<double> pooled = reference_pooled(m, w, batch);
    double l = 0.0;
    for (std::size_t i = 0; i < pooled.size(); ++i) l += pooled[i] * grad[i];
    return l;
  };
  emb.backward_update(batch, grad.data(), 1.0f, 0);
  const double h = 1e-3;
  for (int t = 0; t < m.num_tables(); ++t) {
    const std::vector<float> after = table_weights(emb, t);
    auto& wt = weights[static_cast<std::size_t>(t)];
    for (std::size_t k = 0; k < wt.size(); ++k) {
      const double saved = wt[k];
      wt[k] = saved + h;
      const double up = loss(weights);
      wt[k] = saved - h;
      const double down = loss(weights);
      wt[k] = saved;
      const double fd = (up - down) / (2.0 * h);
      const double moved = static_cast<double>(after[k]) - saved;
      ASSERT_NEAR(moved, -fd, 1e-6 * (1.0 + std::fabs(fd))) << "table " << t << " element " << k;
    }
  }
}

class EmbeddingOptimizers : public ::testing::TestWithParam<OptimizerKind> {};

// Three steps with duplicate ids against the double-precision optimizers.
TEST_P(EmbeddingOptimizers, MatchHandComputedUpdatesOverThreeSteps) {
  const ModelConfig m = make_model(7, mixed_tables());
  const OptimConfig o = make_optim(GetParam(), 1e-3, GetParam() == OptimizerKind::sgd ? 0.0 : 0.1);
  EmbeddingCollection emb(m.embedding_spec(), o, 17);
  ReferenceOptimizer ref(m, o, emb);
  Rng rng(41);
  const float lrs[] = {0.05f, 0.2f, 0.1f};
  for (int step = 0; step < 3; ++step) {
    const int64_t batch_size = 29 + step;
    const Batch batch = random_batch(m, batch_size, rng);
    const std::vector<float> grad = random_grad(m, batch_size, rng);
    emb.backward_update(batch, grad.data(), lrs[step], step);
    ref.step(batch, grad, lrs[step]);
  }
  ref.expect_matches(emb, 2e-6);
}

INSTANTIATE_TEST_SUITE_P(Sparse, EmbeddingOptimizers,
                         ::testing::Values(OptimizerKind::sgd, OptimizerKind::adagrad, OptimizerKind::rowwise_adagrad),
                         [](const auto& param_info) {
                           switch (param_info.param) {
                             case OptimizerKind::sgd: return std::string("sgd");
                             case OptimizerKind::adagrad: return std::string("adagrad");
                             default: return std::string("rowwise_adagrad");
                           }
                         });

// A 4.2M-row table needs 23 id bits: three radix passes over the ids.
TEST(EmbeddingBackward, LargeTableGroupsIdsCorrectly) {
  const ModelConfig m = make_model(3, {{"huge", 4200000, 40, false, Pooling::sum}, {"tiny", 3, 40, false, Pooling::mean}});
  const OptimConfig o = make_optim(OptimizerKind::rowwise_adagrad, 1e-8, 0.0);
  EmbeddingCollection emb(m.embedding_spec(), o, 5);
  ReferenceOptimizer ref(m, o, emb);
  Rng rng(51);
  const int64_t batch_size = 64;
  Batch batch = random_batch(m, batch_size, rng);
  // Ids spread over the whole range, plus a hot id repeated all over the batch.
  for (int64_t b = 0; b < batch_size; b += 3) batch.ids[static_cast<std::size_t>(batch.bag_begin(0, b) + 5)] = 4199999;
  const std::vector<float> grad = random_grad(m, batch_size, rng);
  emb.backward_update(batch, grad.data(), 0.01f, 0);
  ref.step(batch, grad, 0.01);
  // The tiny table's rows sum about 850 fp32 contributions each.
  ref.expect_matches(emb, 2e-5);
}

// ---------------------------------------------------------------------------- 16-bit rows

class EmbeddingSixteenBit : public ::testing::TestWithParam<DType> {};

// Every row holds the same values and receives the same gradient, so each element's exact
// fp32 result is the same across rows; stochastic rounding must land on one of its two
// neighbours, round up with probability equal to the distance, and be repeatable.
TEST_P(EmbeddingSixteenBit, UpdatesAreUnbiasedAndDeterministic) {
  const DType dt = GetParam();
  const int dim = 4;
  const int64_t rows = 4096;
  const ModelConfig m = make_model(dim, {{"t", rows, 1, false, Pooling::sum}}, dt);
  const auto encode = [dt](float v) { return dt == DType::f16 ? f32_to_f16(v) : f32_to_bf16(v); };
  const auto decode = [dt](uint16_t v) { return dt == DType::f16 ? f16_to_f32(v) : bf16_to_f32(v); };
  const auto truncate = [dt](float v) { return dt == DType::f16 ? f32_to_f16_sr(v, 0) : f32_to_bf16_sr(v, 0); };
  const auto round_up = [dt](float v) { return dt == DType::f16 ? f32_to_f16_sr(v, 0xFFFFFFFFu) : f32_to_bf16_sr(v, 0xFFFFFFFFu); };
  // Starting values (exact in both formats) and the fraction of an ulp the update leaves.
  const float start[dim] = {1.0f, -0.375f, 3.0f, -0.0625f};
  const double fraction[dim] = {0.3, 0.7, 0.5, 0.15};
  float grad_row[dim];
  for (int d = 0; d < dim; ++d) {
    const float ulp = decode(static_cast<uint16_t>(encode(start[d]) + 1)) - start[d];  // away from zero
    grad_row[d] = -static_cast<float>((2.0 + fraction[d]) * ulp);                       // w - g moves outwards
  }
  Batch batch;
  batch.reset(rows, 1, 1);
  for (int64_t b = 0; b < rows; ++b) {
    batch.ids.push_back(static_cast<int32_t>(b));
    batch.offsets[static_cast<std::size_t>(b + 1)] = static_cast<int32_t>(b + 1);
  }
  std::vector<float> grad(static_cast<std::size_t>(rows * dim));
  for (int64_t b = 0; b < rows; ++b)
    for (int d = 0; d < dim; ++d) grad[static_cast<std::size_t>(b * dim + d)] = grad_row[d];

  const auto run = [&](int64_t step) {
    EmbeddingCollection emb(m.embedding_spec(), make_optim(OptimizerKind::sgd), 77);
    Tensor w = find_state(emb, "embedding.t.weight");
    for (int64_t r = 0; r < rows; ++r)
      for (int d = 0; d < dim; ++d) w.data<uint16_t>()[r * dim + d] = encode(start[d]);
    emb.backward_update(batch, grad.data(), 1.0f, step);
    const uint16_t* p = w.data<uint16_t>();
    return std::vector<uint16_t>(p, p + rows * dim);
  };
  const std::vector<uint16_t> result = run(3);
  for (int d = 0; d < dim; ++d) {
    const float exact = start[d] - 1.0f * grad_row[d];
    const uint16_t down = truncate(exact), up = round_up(exact);
    ASSERT_NE(down, up) << "the test value " << exact << " must fall between two 16-bit values";
    const double p_up = (std::fabs(static_cast<double>(exact)) - std::fabs(static_cast<double>(decode(down)))) /
                        (std::fabs(static_cast<double>(decode(up))) - std::fabs(static_cast<double>(decode(down))));
    EXPECT_NEAR(p_up, fraction[d], 1e-3);  // the fp32 result quantises the fraction
    int64_t ups = 0;
    double mean = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      const uint16_t v = result[static_cast<std::size_t>(r * dim + d)];
      ASSERT_TRUE(v == down || v == up) << "element " << d << " row " << r << " is neither neighbour";
      ups += v == up;
      mean += decode(v);
    }
    mean /= static_cast<double>(rows);
    const double spread = std::sqrt(p_up * (1.0 - p_up) / static_cast<double>(rows));  // std. error of the rate
    EXPECT_NEAR(static_cast<double>(ups) / static_cast<double>(rows), p_up, 5.0 * spread) << "element " << d;
    const double gap = std::fabs(static_cast<double>(decode(up)) - decode(down));
    EXPECT_NEAR(mean, exact, 5.0 * spread * gap) << "element " << d << ": rounding is biased";
  }
  EXPECT_EQ(run(3), result) << "same step, different bits";
  const std::vector<uint16_t> other = run(4);
  int64_t differ = 0;
  for (std::size_t i = 0; i < result.size(); ++i) differ += other[i] != result[i];
  EXPECT_GT(differ, static_cast<int64_t>(result.size() / 10)) << "the step does not reseed the rounding";
}

INSTANTIATE_TEST_SUITE_P(RowDtypes, EmbeddingSixteenBit, ::testing::Values(DType::f16, DType::bf16),
                         [](const auto& param_info) { return std::string(dtype_name(param_info.param)); });

// ---------------------------------------------------------------------------- determinism

// The same steps on 1 and 2 threads give bit-identical pooled outputs and state, for every
// row dtype and sparse optimizer.
TEST(EmbeddingCollection, BitIdenticalAcrossThreadCounts) {
  ThreadCountGuard guard;
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adagrad, OptimizerKind::rowwise_adagrad}) {
      const ModelConfig m = make_model(9, mixed_tables(), dt);
      const OptimConfig o = make_optim(kind, 1e-8, 0.01);
      std::vector<std::vector<unsigned char>> states[2];
      std::vector<float> outputs[2];
      for (int threads = 1; threads <= 2; ++threads) {
        omp_set_num_threads(threads);
        EmbeddingCollection emb(m.embedding_spec(), o, 123);
        Rng rng(61);
        for (int step = 0; step < 3; ++step) {
          const int64_t batch_size = 50;
          const Batch batch = random_batch(m, batch_size, rng);
          std::vector<float> pooled(static_cast<std::size_t>(batch_size * m.num_tables() * m.embedding_dim));
          emb.forward(batch, pooled.data());
          outputs[threads - 1].insert(outputs[threads - 1].end(), pooled.begin(), pooled.end());
          const std::vector<float> grad = random_grad(m, batch_size, rng);
          emb.backward_update(batch, grad.data(), 0.05f, step);
        }
        states[threads - 1] = state_bytes(emb);
      }
      EXPECT_TRUE(states[0] == states[1]) << dtype_name(dt) << " optimizer " << static_cast<int>(kind);
      EXPECT_EQ(std::memcmp(outputs[0].data(), outputs[1].data(), outputs[0].size() * sizeof(float)), 0)
          << dtype_name(dt) << " optimizer " << static_cast<int>(kind);
    }
  }
}
