#pragma once
// The planted teacher of the synthetic dataset: a fixed random model, drawn from the
// seed, that turns a sample's features into the logit its label is drawn from. It has
// the structure DLRM can represent, so a well-trained DLRM can approach it:
//
//   f_0      = D x / sqrt(num_dense)                 dense features projected to `dim`
//   f_{t+1}  = scale_t * sum over the bag of w_t(id)  pooled teacher vector of table t
//   linear   = sum_j a_j x_j
//   pairs    = sum over features s < u of c_su <f_s, f_u> / sqrt(dim)
//   logit    = bias + teacher_scale * spread * (sqrt(share) * (linear - mean_l) / std_l
//                                   + sqrt(1 - share) * (pairs - mean_p) / std_p)
//
// w_t(row) is a `dim`-vector derived from a hash of (seed, table, row), so 40M-row tables
// need no teacher memory. scale_t is 1/sqrt(hotness) under sum pooling and
// sqrt(hotness)/length under mean pooling (a constant factor per table for fixed bags).
// The means and standard deviations of the two parts are measured on calibration
// samples (see SyntheticSource), which makes the informative part of the logit have
// standard deviation `spread` (about 1.6) at teacher_scale = 1 whatever the tables.
#include <cstdint>
#include <vector>

#include "data/data_config.h"
#include "data/feature_spec.h"

namespace hetrec::inline data {

class Teacher {
 public:
  // Standard deviation of the informative part of the logit at teacher_scale = 1. Chosen
  // so the Bayes-optimal AUC lands near 0.8, the level of real click logs (the MLPerf
  // DLRM-DCNv2 target on Criteo 1TB is AUC 0.80275): on the reference workload's tables
  // with the default seed it is 0.81 (0.69 at teacher_scale 0.5, 0.92 at 2).
  static constexpr double kLogitSpread = 1.6;
  // Fixed logit offset: about a third of labels are positive (Criteo 1TB: about a quarter).
  static constexpr double kLogitBias = -1.0;
  // Fraction of the informative logit variance carried by the linear dense term; the
  // rest comes from the pairwise interactions.
  static constexpr double kLinearShare = 0.25;

  struct Components {
    double linear = 0.0;
    double pairs = 0.0;
  };
  struct Normalisation {
    double linear_mean = 0.0, linear_std = 0.0;
    double pairs_mean = 0.0, pairs_std = 0.0;
  };

  Teacher(const FeatureSpec& model, const SyntheticConfig& config);

  int dim() const { return dim_; }
  int num_dense() const { return num_dense_; }
  int num_tables() const { return static_cast<int>(hotness_.size()); }
  int features() const { return num_tables() + 1; }

  // w_t(row): `dim` values, each uniform on [-sqrt(3), sqrt(3)] (unit variance).
  void row_vector(int table, int64_t row, double* out) const;
  double dense_weight(int j) const { return dense_weight_[static_cast<std::size_t>(j)]; }
  double dense_projection(int r, int j) const {
    return dense_projection_[static_cast<std::size_t>(r) * static_cast<std::size_t>(num_dense_) +
                             static_cast<std::size_t>(j)];
  }
  // c_su for features s < u (feature 0 is the dense projection, feature t+1 table t).
  double pair_weight(int s, int u) const {
    return pair_weight_[static_cast<std::size_t>(s) * static_cast<std::size_t>(features()) +
                        static_cast<std::size_t>(u)];
  }
  double pool_scale(int table, int64_t bag_length) const;

  // The two raw parts of the logit for one sample: bags[t] holds lengths[t] ids of
  // table t. `scratch` is resized as needed (reuse it across calls).
  Components components(const float* dense, const int32_t* const* bags, const int32_t* lengths,
                        std::vector<double>& scratch) const;

  void set_normalisation(const Normalisation& norm) { norm_ = norm; }
  const Normalisation& normalisation() const { return norm_; }
  double logit(const Components& c) const;

 private:
  int num_dense_;
  int dim_;
  double scale_;
  std::vector<int> hotness_;
  std::vector<bool> mean_pooling_;
  std::vector<uint64_t> row_keys_;
  std::vector<double> dense_weight_;
  std::vector<double> dense_projection_;  // dim x num_dense
  std::vector<double> pair_weight_;       // features x features, upper triangle used
  Normalisation norm_;
};

}  // namespace hetrec::data::data
