#pragma once
// Synthetic click data with a planted teacher (see data/teacher.h). Sample i of a split
// is a pure function of (seed, split, i): batches are generated in parallel over their
// samples, seek() is O(1), and train and eval share the teacher but not the samples.
//
// Per sample:
//   dense feature j: x = floor(exp(mu_j + sigma_j * N(0,1))) as an integer count, then
//                    log(x + 1) as in the Criteo preprocessing; mu_j, sigma_j from the seed.
//   table t:         bag length = hotness, or uniform in [1, 2*hotness - 1] with
//                    variable_bags; ids = a fixed keyed permutation of Zipf(zipf_exponent)
//                    ranks over the table's rows, so hot rows are scattered. With
//                    raw_ids_per_row = k > 1 the ranks and the permutation range over
//                    k x rows raw ids, the teacher scores the raw ids, and the model
//                    sees each raw id hashed into the table's rows (collisions).
//   label:           y ~ Bernoulli(sigmoid(teacher logit)), then flipped with
//                    probability label_flip.
#include <cstdint>
#include <string>
#include <vector>

#include "data/data_config.h"
#include "data/permutation.h"
#include "data/source.h"
#include "data/split.h"
#include "data/teacher.h"
#include "data/zipf.h"
#include "data/feature_spec.h"

namespace hetrec::inline data {

// One generated sample, laid out per sample (Batch is table-major across samples).
struct SyntheticSample {
  std::vector<float> dense;      // num_dense, transformed
  std::vector<int32_t> lengths;  // bag length per table
  std::vector<int32_t> ids;      // all bags, table after table
  double logit = 0.0;            // teacher logit
  float label = 0.0f;
};

class SyntheticSource final : public BatchSource {
 public:
  // Samples drawn by the teacher to measure its normalisation (see data/teacher.h);
  // the estimate of each standard deviation is within about 1.5% (1/sqrt(2n)).
  static constexpr int64_t kCalibrationSamples = 8192;

  // Validates the configuration (ConfigError naming the key). `threads` generate the
  // samples of a batch (data.reader_threads).
  SyntheticSource(const FeatureSpec& model, const SyntheticConfig& config, Split split, int threads = 1);

  bool next(Batch& batch, int64_t batch_size) override;
  int64_t position() const override { return position_; }
  void seek(int64_t sample) override;
  int64_t size_hint() const override { return samples_; }
  DataCounters counters() const override { return DataCounters{position_, 0}; }
  std::string describe() const override;

  Split split() const { return split_; }
  const Teacher& teacher() const { return teacher_; }
  const SyntheticConfig& config() const { return config_; }
  const FeatureSpec& features() const { return features_; }

  // Pure functions of (seed, split, i), for any i >= 0 (not only i < size_hint()).
  void sample(int64_t i, SyntheticSample& out) const;
  double teacher_logit(int64_t i) const;
  // The true P(y = 1) of sample i including the flip: p (1 - f) + (1 - p) f with
  // p = sigmoid(logit), f = label_flip.
  double teacher_probability(int64_t i) const;
  // teacher_probability of samples first .. first+count-1 into probabilities, and when
  // `labels` is given, their drawn labels (in parallel).
  void teacher_probabilities(int64_t first, int64_t count, double* probabilities,
                             float* labels = nullptr) const;

 private:
  // Keys of the per-sample random streams of one split (or of the calibration set).
  struct Streams {
    uint64_t bags = 0, dense = 0, label = 0;
    std::vector<uint64_t> ids;  // per table
  };
  // Per-thread buffers for generating one sample outside a batch.
  struct Scratch {
    std::vector<int32_t> lengths, ids;
    std::vector<int32_t*> writable_bags;
    std::vector<float> dense;
    std::vector<double> teacher;
  };

  Streams make_streams(uint64_t split_key) const;
  void bag_lengths(const Streams& s, int64_t i, int32_t* lengths) const;
  // Fills dense[num_dense] and bags[t][0 .. lengths[t]), returns the teacher's parts.
  Teacher::Components generate(const Streams& s, int64_t i, const int32_t* lengths, float* dense,
                               int32_t* const* bags, std::vector<double>& teacher_scratch) const;
  float draw_label(const Streams& s, int64_t i, double logit) const;
  // Generates sample i of `s` into `scratch`, returning its parts.
  Teacher::Components generate_one(const Streams& s, int64_t i, Scratch& scratch) const;
  void calibrate();

  FeatureSpec features_;
  SyntheticConfig config_;
  Split split_;
  int threads_;
  int64_t samples_;
  int64_t position_ = 0;
  std::vector<double> dense_mu_, dense_sigma_;
  std::vector<ZipfSampler> zipf_;
  std::vector<IndexPermutation> permutation_;
  std::vector<int64_t> table_rows_;  // the rows raw ids are hashed into (raw_ids_per_row > 1)
  uint64_t hash_key_ = 0;
  std::vector<int> max_bag_;
  int64_t max_ids_per_sample_ = 0;
  Teacher teacher_;
  Streams streams_;
};

}  // namespace hetrec::data::data
