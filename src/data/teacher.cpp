#include "data/teacher.h"

#include <cmath>

#include "core/rng.h"

namespace hetrec::inline data {
namespace {

// Stream tags under the dataset seed; any distinct constants would do.
constexpr uint64_t kTeacherStream = 0x7465616368657231ull;  // "teacher1"
constexpr uint64_t kRowVectorStream = 1;
constexpr uint64_t kDenseWeightStream = 2;
constexpr uint64_t kPairWeightStream = 3;

// sqrt(3): a uniform variable on [-sqrt(3), sqrt(3)] has unit variance.
constexpr double kUnitUniformHalfWidth = 1.7320508075688772;

double unit_uniform(Rng& rng) { return (2.0 * rng.uniform() - 1.0) * kUnitUniformHalfWidth; }

}  // namespace

Teacher::Teacher(const FeatureSpec& model, const SyntheticConfig& config)
    : num_dense_(model.num_dense), dim_(config.teacher_dim), scale_(config.teacher_scale) {
  const uint64_t key = hash_combine(config.seed, kTeacherStream);
  for (int t = 0; t < model.num_tables(); ++t) {
    const TableConfig& table = model.tables[static_cast<std::size_t>(t)];
    hotness_.push_back(table.hotness);
    mean_pooling_.push_back(table.pooling == Pooling::mean);
    row_keys_.push_back(hash_combine(hash_combine(key, kRowVectorStream), static_cast<uint64_t>(t)));
  }
  Rng dense_rng(key, kDenseWeightStream);
  for (int j = 0; j < num_dense_; ++j) dense_weight_.push_back(unit_uniform(dense_rng));
  for (int k = 0; k < dim_ * num_dense_; ++k) dense_projection_.push_back(unit_uniform(dense_rng));
  Rng pair_rng(key, kPairWeightStream);
  const int f = features();
  pair_weight_.assign(static_cast<std::size_t>(f) * static_cast<std::size_t>(f), 0.0);
  for (int s = 0; s < f; ++s)
    for (int u = s + 1; u < f; ++u)
      pair_weight_[static_cast<std::size_t>(s * f + u)] = unit_uniform(pair_rng);
}

void Teacher::row_vector(int table, int64_t row, double* out) const {
  Rng rng(row_keys_[static_cast<std::size_t>(table)], static_cast<uint64_t>(row));
  for (int r = 0; r < dim_; ++r) out[r] = unit_uniform(rng);
}

double Teacher::pool_scale(int table, int64_t bag_length) const {
  const double hotness = hotness_[static_cast<std::size_t>(table)];
  if (!mean_pooling_[static_cast<std::size_t>(table)]) return 1.0 / std::sqrt(hotness);
  return bag_length > 0 ? std::sqrt(hotness) / static_cast<double>(bag_length) : 0.0;
}

Teacher::Components Teacher::components(const float* dense, const int32_t* const* bags,
                                        const int32_t* lengths, std::vector<double>& scratch) const {
  const int f = features();
  const auto d = static_cast<std::size_t>(dim_);
  scratch.assign(static_cast<std::size_t>(f + 1) * d, 0.0);
  double* feature = scratch.data();                 // f x dim
  double* row = scratch.data() + static_cast<std::size_t>(f) * d;  // one row vector

  Components c;
  if (num_dense_ > 0) {
    const double inv_sqrt_dense = 1.0 / std::sqrt(static_cast<double>(num_dense_));
    for (int j = 0; j < num_dense_; ++j) c.linear += dense_weight(j) * dense[j];
    for (int r = 0; r < dim_; ++r) {
      double acc = 0.0;
      for (int j = 0; j < num_dense_; ++j) acc += dense_projection(r, j) * dense[j];
      feature[r] = acc * inv_sqrt_dense;
    }
  }
  for (int t = 0; t < num_tables(); ++t) {
    double* pooled = feature + static_cast<std::size_t>(t + 1) * d;
    for (int32_t k = 0; k < lengths[t]; ++k) {
      row_vector(t, bags[t][k], row);
      for (std::size_t r = 0; r < d; ++r) pooled[r] += row[r];
    }
    const double scale = pool_scale(t, lengths[t]);
    for (std::size_t r = 0; r < d; ++r) pooled[r] *= scale;
  }
  for (int s = 0; s < f; ++s) {
    for (int u = s + 1; u < f; ++u) {
      double dot = 0.0;
      for (std::size_t r = 0; r < d; ++r) dot += feature[static_cast<std::size_t>(s) * d + r] *
                                                 feature[static_cast<std::size_t>(u) * d + r];
      c.pairs += pair_weight(s, u) * dot;
    }
  }
  c.pairs /= std::sqrt(static_cast<double>(dim_));
  return c;
}

double Teacher::logit(const Components& c) const {
  // A part with no spread on the calibration samples (no dense features, or no pairs)
  // carries no information; its share of the variance goes to the other part.
  double linear_share = norm_.linear_std > 0.0 ? kLinearShare : 0.0;
  double pairs_share = norm_.pairs_std > 0.0 ? 1.0 - kLinearShare : 0.0;
  const double total = linear_share + pairs_share;
  if (total == 0.0) return kLogitBias;
  linear_share /= total;
  pairs_share /= total;
  double informative = 0.0;
  if (linear_share > 0.0)
    informative += std::sqrt(linear_share) * (c.linear - norm_.linear_mean) / norm_.linear_std;
  if (pairs_share > 0.0)
    informative += std::sqrt(pairs_share) * (c.pairs - norm_.pairs_mean) / norm_.pairs_std;
  return kLogitBias + scale_ * kLogitSpread * informative;
}

}  // namespace hetrec::data::data
