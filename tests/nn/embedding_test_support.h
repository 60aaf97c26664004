#pragma once
// Helpers of the embedding collection tests: model and optimizer configs, random batches
// and gradients, state access, and a double-precision reference optimizer.
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

namespace hetrec::embedding_test {

struct TableSpec {
  std::string name;
  int64_t rows;
  int hotness;
  bool variable;
  Pooling pooling;
};

inline ModelConfig make_model(int dim, const std::vector<TableSpec>& specs, DType row_dtype = DType::f32) {
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

inline OptimConfig make_optim(OptimizerKind kind, double eps = 1e-8, double initial_accumulator = 0.0) {
  OptimConfig o;
  o.sparse = kind;
  o.eps = eps;
  o.adagrad_initial_accumulator = initial_accumulator;
  return o;
}

// Random bags: fixed tables draw `hotness` ids, variable ones 0 to 2*hotness-1 (so empty
// bags occur, and the last sample's bag is always empty). Duplicates are planted in every
// table: the first two ids of bag 0 are equal, and bag 1 starts with bag 0's first id.
inline Batch random_batch(const ModelConfig& m, int64_t batch_size, Rng& rng, int64_t first_sample = 0) {
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

inline std::vector<float> random_grad(const ModelConfig& m, int64_t batch_size, Rng& rng) {
  std::vector<float> g(static_cast<std::size_t>(batch_size * m.num_tables() * m.embedding_dim));
  for (float& x : g) x = static_cast<float>(2.0 * rng.uniform() - 1.0);
  return g;
}

inline Tensor find_state(EmbeddingCollection& emb, const std::string& name) {
  for (NamedTensor& nt : emb.state())
    if (nt.name == name) return nt.tensor;
  ADD_FAILURE() << "no state tensor named " << name;
  return Tensor();
}

inline std::vector<float> as_floats(const Tensor& t) {
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = load_as_f32(t.raw(), i, t.dtype());
  return out;
}

inline std::vector<float> table_weights(EmbeddingCollection& emb, int t) {
  return as_floats(find_state(emb, "embedding." + emb.table(t).name + ".weight"));
}

// Every state tensor's raw bytes, for bitwise comparisons.
inline std::vector<std::vector<unsigned char>> state_bytes(EmbeddingCollection& emb) {
  std::vector<std::vector<unsigned char>> out;
  for (NamedTensor& nt : emb.state()) {
    const auto* p = static_cast<const unsigned char*>(nt.tensor.raw());
    out.emplace_back(p, p + nt.tensor.nbytes());
  }
  return out;
}

// Pooled embeddings in double from the given weights ([t] -> rows x dim).
inline std::vector<double> reference_pooled(const ModelConfig& m, const std::vector<std::vector<double>>& weights,
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
inline std::vector<TableSpec> mixed_tables() {
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

}  // namespace hetrec::embedding_test
