#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"
#include "model/model_config.h"
#include "nn/embedding_collection.h"

using namespace hetrec;

namespace {

struct TableSpec {
  std::string name;
  int64_t rows;
  int hotness;
  bool variable;
  Pooling pooling;
};

ModelConfig make_model(int dim, const std::vector<TableSpec>& specs, DType row_dtype = DType::f32) {
  ModelConfig m;
  m.embedding_dim = dim;
  m.row_dtype = row_dtype;
  for (const TableSpec& s : specs) {
    TableConfig t;
    t.name = s.name;
    t.rows = s.rows;
    t.hotness = s.hotness;
    t.variable_bags = s.variable;
    t.pooling = s.pooling;
    m.tables.push_back(t);
  }
  return m;
}

OptimConfig make_optim(OptimizerKind kind, double eps = 1e-8, double initial_accumulator = 0.0) {
  OptimConfig o;
  o.sparse = kind;
  o.eps = eps;
  o.adagrad_initial_accumulator = initial_accumulator;
  return o;
}

// Random bags: fixed tables draw `hotness` ids, variable ones 0 to 2*hotness-1 (so empty
// bags occur, and the last sample's bag is always empty). Duplicates are planted in every
// table: the first two ids of bag 0 are equal, and bag 1 starts with bag 0's first id.
Batch random_batch(const ModelConfig& m, int64_t batch_size, Rng& rng, int64_t first_sample = 0) {
  Batch batch;
  batch.reset(batch_size, 1, m.num_tables());
  batch.first_sample = first_sample;
  for (int t = 0; t < m.num_tables(); ++t) {
    const TableConfig& table = m.tables[static_cast<std::size_t>(t)];
    for (int64_t b = 0; b < batch_size; ++b) {
      int64_t len = table.hotness;
      if (table.variable_bags) len = b == batch_size - 1 ? 0 : static_cast<int64_t>(rng.below(2 * static_cast<uint64_t>(table.hotness)));
      const std::size_t start = batch.ids.size();
      for (int64_t i = 0; i < len; ++i) batch.ids.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(table.rows))));
      if (b == 0 && len >= 2) batch.ids[start + 1] = batch.ids[start];
      if (b == 1 && len >= 1) {
        const std::size_t bag0 = static_cast<std::size_t>(batch.offsets[static_cast<std::size_t>(t * batch_size)]);
        if (bag0 < start) batch.ids[start] = batch.ids[bag0];
      }
      batch.offsets[static_cast<std::size_t>(t * batch_size + b + 1)] = static_cast<int32_t>(batch.ids.size());
    }
  }
  return batch;
}

std::vector<float> random_grad(const ModelConfig& m, int64_t batch_size, Rng& rng) {
  std::vector<float> g(static_cast<std::size_t>(batch_size * m.num_tables() * m.embedding_dim));
  for (float& x : g) x = static_cast<float>(2.0 * rng.uniform() - 1.0);
  return g;
}

Tensor find_state(EmbeddingCollection& emb, const std::string& name) {
  for (NamedTensor& nt : emb.state())
    if (nt.name == name) return nt.tensor;
  ADD_FAILURE() << "no state tensor named " << name;
  return Tensor();
}

std::vector<float> as_floats(const Tensor& t) {
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = load_as_f32(t.raw(), i, t.dtype());
  return out;
}

std::vector<float> table_weights(EmbeddingCollection& emb, int t) {
  return as_floats(find_state(emb, "embedding." + emb.table(t).name + ".weight"));
}

// Every state tensor's raw bytes, for bitwise comparisons.
std::vector<std::vector<unsigned char>> state_bytes(EmbeddingCollection& emb) {
  std::vector<std::vector<unsigned char>> out;
  for (NamedTensor& nt : emb.state()) {
    const auto* p = static_cast<const unsigned char*>(nt.tensor.raw());
    out.emplace_back(p, p + nt.tensor.nbytes());
  }
  return out;
}

// Pooled embeddings in double from the given weights ([t] -> rows x dim).
std::vector<double> reference_pooled(const ModelConfig& m, const std::vector<std::vector<double>>& weights,
                                     const Batch& batch) {
  const int num = m.num_tables();
  const int dim = m.embedding_dim;
  std::vector<double> out(static_cast<std::size_t>(batch.size * num * dim), 0.0);
  for (int64_t b = 0; b < batch.size; ++b)
    for (int t = 0; t < num; ++t) {
      double* o = &out[static_cast<std::size_t>((b * num + t) * dim)];
      const int64_t begin = batch.bag_begin(t, b), end = batch.bag_end(t, b);
      for (int64_t i = begin; i < end; ++i)
        for (int d = 0; d < dim; ++d)
          o[d] += weights[static_cast<std::size_t>(t)][static_cast<std::size_t>(batch.ids[static_cast<std::size_t>(i)] * dim + d)];
      if (m.tables[static_cast<std::size_t>(t)].pooling == Pooling::mean && end > begin)
        for (int d = 0; d < dim; ++d) o[d] /= static_cast<double>(end - begin);
    }
  return out;
}

// The sparse optimizers in double on the rows a batch touches. State starts from a
// snapshot of the collection and is carried over steps; rows never touched keep the
// snapshot.
class ReferenceOptimizer {
 public:
  ReferenceOptimizer(const ModelConfig& m, const OptimConfig& o, EmbeddingCollection& emb) : model_(m), optim_(o) {
    for (int t = 0; t < m.num_tables(); ++t) {
      initial_weights_.push_back(table_weights(emb, t));
      if (o.sparse != OptimizerKind::sgd)
        initial_acc_.push_back(as_floats(find_state(emb, "embedding." + emb.table(t).name + ".accumulator")));
    }
    weights_.resize(static_cast<std::size_t>(m.num_tables()));
    acc_.resize(static_cast<std::size_t>(m.num_tables()));
  }

  void step(const Batch& batch, const std::vector<float>& grad_pooled, double lr) {
    const int num = model_.num_tables();
    const int dim = model_.embedding_dim;
    for (int t = 0; t < num; ++t) {
      std::map<int64_t, std::vector<double>> row_grad;
      for (int64_t b = 0; b < batch.size; ++b) {
        const int64_t begin = batch.bag_begin(t, b), end = batch.bag_end(t, b);
        const double scale =
            model_.tables[static_cast<std::size_t>(t)].pooling == Pooling::mean ? 1.0 / static_cast<double>(end - begin) : 1.0;
        for (int64_t i = begin; i < end; ++i) {
          std::vector<double>& g = row_grad[batch.ids[static_cast<std::size_t>(i)]];
          g.resize(static_cast<std::size_t>(dim), 0.0);
          for (int d = 0; d < dim; ++d) g[static_cast<std::size_t>(d)] += scale * grad_pooled[static_cast<std::size_t>((b * num + t) * dim + d)];
        }
      }
      for (const auto& [row, g] : row_grad) {
        std::vector<double>& w = weight_row(t, row);
        switch (optim_.sparse) {
          case OptimizerKind::sgd:
            for (int d = 0; d < dim; ++d) w[static_cast<std::size_t>(d)] -= lr * g[static_cast<std::size_t>(d)];
            break;
          case OptimizerKind::adagrad: {
            std::vector<double>& a = acc_row(t, row, dim);
            for (int d = 0; d < dim; ++d) {
              const auto k = static_cast<std::size_t>(d);
              a[k] += g[k] * g[k];
              w[k] -= lr * g[k] / (std::sqrt(a[k]) + optim_.eps);
            }
            break;
          }
          default: {
            std::vector<double>& a = acc_row(t, row, 1);
            double mean_sq = 0.0;
            for (double x : g) mean_sq += x * x;
            a[0] += mean_sq / dim;
            for (int d = 0; d < dim; ++d)
              w[static_cast<std::size_t>(d)] -= lr / (std::sqrt(a[0]) + optim_.eps) * g[static_cast<std::size_t>(d)];
          }
        }
      }
    }
  }

  // Compares every row against the collection: touched rows within `rel_tol`, the
  // others bit for bit.
  void expect_matches(EmbeddingCollection& emb, double rel_tol) const {
    const int dim = model_.embedding_dim;
    for (int t = 0; t < model_.num_tables(); ++t) {
      const std::vector<float> now = table_weights(emb, t);
      const auto& touched = weights_[static_cast<std::size_t>(t)];
      for (int64_t r = 0; r < emb.rows(t); ++r) {
        const auto it = touched.find(r);
        for (int d = 0; d < dim; ++d) {
          const auto k = static_cast<std::size_t>(r * dim + d);
          if (it == touched.end()) {
            ASSERT_EQ(now[k], initial_weights_[static_cast<std::size_t>(t)][k]) << "untouched row " << r << " of table " << t;
          } else {
            const double expect = it->second[static_cast<std::size_t>(d)];
            ASSERT_NEAR(now[k], expect, rel_tol * (1.0 + std::fabs(expect))) << "table " << t << " row " << r << " element " << d;
          }
        }
      }
      if (optim_.sparse == OptimizerKind::sgd) continue;
      const std::vector<float> acc_now = as_floats(find_state(emb, "embedding." + emb.table(t).name + ".accumulator"));
      const int width = optim_.sparse == OptimizerKind::adagrad ? dim : 1;
      const auto& acc_touched = acc_[static_cast<std::size_t>(t)];
      for (int64_t r = 0; r < emb.rows(t); ++r) {
        const auto it = acc_touched.find(r);
        for (int d = 0; d < width; ++d) {
          const auto k = static_cast<std::size_t>(r * width + d);
          const double expect = it == acc_touched.end() ? initial_acc_[static_cast<std::size_t>(t)][k] : it->second[static_cast<std::size_t>(d)];
          ASSERT_NEAR(acc_now[k], expect, rel_tol * (1.0 + expect)) << "accumulator of table " << t << " row " << r;
        }
      }
    }
  }

 private:
  std::vector<double>& weight_row(int t, int64_t row) {
    auto& rows = weights_[static_cast<std::size_t>(t)];
    auto it = rows.find(row);
    if (it != rows.end()) return it->second;
    const int dim = model_.embedding_dim;
    const auto& init = initial_weights_[static_cast<std::size_t>(t)];
    return rows[row] = std::vector<double>(init.begin() + row * dim, init.begin() + (row + 1) * dim);
  }
  std::vector<double>& acc_row(int t, int64_t row, int width) {
    auto& rows = acc_[static_cast<std::size_t>(t)];
    auto it = rows.find(row);
    if (it != rows.end()) return it->second;
    const auto& init = initial_acc_[static_cast<std::size_t>(t)];
    return rows[row] = std::vector<double>(init.begin() + row * width, init.begin() + (row + 1) * width);
  }

  ModelConfig model_;
  OptimConfig optim_;
  std::vector<std::vector<float>> initial_weights_, initial_acc_;
  std::vector<std::map<int64_t, std::vector<double>>> weights_, acc_;
};

// Tables covering sum and mean pooling, fixed and variable bags, tiny tables (many
// duplicates) and one large enough that its ids take the radix-sort path.
std::vector<TableSpec> mixed_tables() {
  return {{"a", 50, 3, false, Pooling::sum},
          {"b", 7, 2, true, Pooling::mean},
          {"c", 3000, 12, true, Pooling::sum},
          {"d", 1, 2, false, Pooling::mean},
          {"e", 4, 4, true, Pooling::sum}};
}

// Restores the OpenMP thread count when a test ends.
class ThreadCountGuard {
 public:
  ThreadCountGuard() : saved_(omp_get_max_threads()) {}
  ~ThreadCountGuard() { omp_set_num_threads(saved_); }

 private:
  int saved_;
};

}  // namespace

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
