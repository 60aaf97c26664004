#include "data/synthetic.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"
#include "core/rng.h"

namespace hetrec::inline data {
namespace {

// Stream tags under the dataset seed; any distinct constants would do.
constexpr uint64_t kTrainStream = 0x747261696e000001ull;        // "train"
constexpr uint64_t kEvalStream = 0x6576616c00000002ull;         // "eval"
constexpr uint64_t kCalibrationStream = 0x63616c6962000003ull;  // "calib"
constexpr uint64_t kDenseShapeStream = 0x64656e7365000004ull;   // "dense"
constexpr uint64_t kPermutationStream = 0x7065726d00000005ull;  // "perm"
constexpr uint64_t kRawHashStream = 0x6861736800000006ull;      // "hash"
constexpr uint64_t kBagStream = 1, kDenseStream = 2, kLabelStream = 3, kIdStream = 4;

// Per-feature log-count location mu_j ~ U[0, 5) and scale sigma_j ~ U[0.5, 2): medians
// from 1 to ~150 with heavy right tails and many zeros, like Criteo's integer features.
constexpr double kDenseMuMax = 5.0;
constexpr double kDenseSigmaMin = 0.5, kDenseSigmaMax = 2.0;

// Upper bound on a table's hotness: keeps 2*hotness - 1 and per-batch id counts far from
// int32 limits. The heaviest reference table has hotness 100.
constexpr int kMaxHotness = 1 << 16;
// Upper bound on teacher_dim: the teacher costs O(dim) per id.
constexpr int kMaxTeacherDim = 1024;

const FeatureSpec& validated(const FeatureSpec& model, const SyntheticConfig& c, int threads) {
  if (c.train_samples < 0)
    throw ConfigError(fmt::format("data.synthetic.train_samples = {}: expected >= 0", c.train_samples));
  if (c.eval_samples < 0)
    throw ConfigError(fmt::format("data.synthetic.eval_samples = {}: expected >= 0", c.eval_samples));
  if (!std::isfinite(c.zipf_exponent) || c.zipf_exponent < 0.0)
    throw ConfigError(fmt::format("data.synthetic.zipf_exponent = {}: expected a finite value >= 0",
                                  c.zipf_exponent));
  if (c.teacher_dim < 1 || c.teacher_dim > kMaxTeacherDim)
    throw ConfigError(fmt::format("data.synthetic.teacher_dim = {}: expected 1 to {}", c.teacher_dim,
                                  kMaxTeacherDim));
  if (!std::isfinite(c.teacher_scale) || c.teacher_scale < 0.0)
    throw ConfigError(fmt::format("data.synthetic.teacher_scale = {}: expected a finite value >= 0",
                                  c.teacher_scale));
  if (!(c.label_flip >= 0.0 && c.label_flip <= 1.0))
    throw ConfigError(fmt::format("data.synthetic.label_flip = {}: expected a probability in [0, 1]",
                                  c.label_flip));
  if (c.raw_ids_per_row < 1)
    throw ConfigError(fmt::format("data.synthetic.raw_ids_per_row = {}: expected >= 1", c.raw_ids_per_row));
  if (threads < 1) throw ConfigError(fmt::format("data.reader_threads = {}: expected >= 1", threads));
  if (model.num_dense < 0)
    throw ConfigError(fmt::format("model.num_dense = {}: expected >= 0", model.num_dense));
  for (int t = 0; t < model.num_tables(); ++t) {
    const TableConfig& table = model.tables[static_cast<std::size_t>(t)];
    if (table.rows < 1 || table.rows > std::numeric_limits<int32_t>::max())
      throw ConfigError(fmt::format("model.tables[{}] ({}).rows = {}: expected 1 to {} (ids are int32)", t,
                                    table.name, table.rows, std::numeric_limits<int32_t>::max()));
    if (table.hotness < 1 || table.hotness > kMaxHotness)
      throw ConfigError(fmt::format("model.tables[{}] ({}).hotness = {}: expected 1 to {}", t, table.name,
                                    table.hotness, kMaxHotness));
  }
  return model;
}

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

// The features as the teacher sees them: every table with raw_ids_per_row x its rows raw
// ids. ConfigError when a raw space passes the int32 ids.
FeatureSpec raw_features(const FeatureSpec& model, const SyntheticConfig& c) {
  FeatureSpec raw = model;
  if (c.raw_ids_per_row <= 1) return raw;
  for (std::size_t t = 0; t < raw.tables.size(); ++t) {
    TableConfig& table = raw.tables[t];
    if (table.rows > std::numeric_limits<int32_t>::max() / c.raw_ids_per_row)
      throw ConfigError(fmt::format("data.synthetic.raw_ids_per_row = {}: table {} ({} rows) would have more than {} "
                                    "raw ids (ids are int32)",
                                    c.raw_ids_per_row, table.name, table.rows, std::numeric_limits<int32_t>::max()));
    table.rows *= c.raw_ids_per_row;
  }
  return raw;
}

}  // namespace

SyntheticSource::SyntheticSource(const FeatureSpec& model, const SyntheticConfig& config, Split split,
                                 int threads)
    : features_(validated(model, config, threads)),
      config_(config),
      split_(split),
      threads_(threads),
      samples_(split == Split::train ? config.train_samples : config.eval_samples),
      teacher_(raw_features(features_, config), config) {
  Rng shape_rng(config.seed, kDenseShapeStream);
  for (int j = 0; j < model.num_dense; ++j) {
    dense_mu_.push_back(kDenseMuMax * shape_rng.uniform());
    dense_sigma_.push_back(kDenseSigmaMin + (kDenseSigmaMax - kDenseSigmaMin) * shape_rng.uniform());
  }
  const uint64_t permutation_key = hash_combine(config.seed, kPermutationStream);
  hash_key_ = hash_combine(config.seed, kRawHashStream);
  for (int t = 0; t < model.num_tables(); ++t) {
    const TableConfig& table = model.tables[static_cast<std::size_t>(t)];
    const int64_t raw_rows = table.rows * config.raw_ids_per_row;
    zipf_.emplace_back(raw_rows, config.zipf_exponent);
    permutation_.emplace_back(static_cast<uint64_t>(raw_rows), hash_combine(permutation_key, static_cast<uint64_t>(t)));
    table_rows_.push_back(table.rows);
    max_bag_.push_back(table.variable_bags ? 2 * table.hotness - 1 : table.hotness);
    max_ids_per_sample_ += max_bag_.back();
  }
  streams_ = make_streams(hash_combine(config.seed, split == Split::train ? kTrainStream : kEvalStream));
  calibrate();
}

SyntheticSource::Streams SyntheticSource::make_streams(uint64_t split_key) const {
  Streams s;
  s.bags = hash_combine(split_key, kBagStream);
  s.dense = hash_combine(split_key, kDenseStream);
  s.label = hash_combine(split_key, kLabelStream);
  const uint64_t ids = hash_combine(split_key, kIdStream);
  for (int t = 0; t < features_.num_tables(); ++t) s.ids.push_back(hash_combine(ids, static_cast<uint64_t>(t)));
  return s;
}

void SyntheticSource::bag_lengths(const Streams& s, int64_t i, int32_t* lengths) const {
  for (int t = 0; t < features_.num_tables(); ++t) {
    const TableConfig& table = features_.tables[static_cast<std::size_t>(t)];
    if (!table.variable_bags) {
      lengths[t] = table.hotness;
      continue;
    }
    // Draw number t of the sample's bag stream: lengths are independent per table.
    Rng rng(s.bags, static_cast<uint64_t>(i));
    rng.set_counter(static_cast<uint64_t>(t));
    lengths[t] = 1 + static_cast<int32_t>(rng.below(static_cast<uint64_t>(2 * table.hotness - 1)));
  }
}

Teacher::Components SyntheticSource::generate(const Streams& s, int64_t i, const int32_t* lengths,
                                              float* dense, int32_t* const* bags,
                                              std::vector<double>& teacher_scratch) const {
  Rng dense_rng(s.dense, static_cast<uint64_t>(i));
  for (int j = 0; j < features_.num_dense; ++j) {
    const auto sj = static_cast<std::size_t>(j);
    const double count = std::floor(std::exp(dense_mu_[sj] + dense_sigma_[sj] * dense_rng.normal()));
    dense[j] = static_cast<float>(std::log1p(count));
  }
  for (int t = 0; t < features_.num_tables(); ++t) {
    const auto st = static_cast<std::size_t>(t);
    Rng id_rng(s.ids[st], static_cast<uint64_t>(i));
    for (int32_t k = 0; k < lengths[t]; ++k) {
      const int64_t rank = zipf_[st](id_rng);
      bags[t][k] = static_cast<int32_t>(permutation_[st](static_cast<uint64_t>(rank)));
    }
  }
  const Teacher::Components parts = teacher_.components(dense, bags, lengths, teacher_scratch);
  if (config_.raw_ids_per_row > 1)  // the model sees each raw id hashed into the table
    for (int t = 0; t < features_.num_tables(); ++t) {
      const auto st = static_cast<std::size_t>(t);
      const auto rows = static_cast<uint64_t>(table_rows_[st]);
      for (int32_t k = 0; k < lengths[t]; ++k)
        bags[t][k] = static_cast<int32_t>(hash_combine(hash_key_ + st, static_cast<uint64_t>(bags[t][k])) % rows);
    }
  return parts;
}

float SyntheticSource::draw_label(const Streams& s, int64_t i, double logit) const {
  Rng rng(s.label, static_cast<uint64_t>(i));
  bool positive = rng.uniform() < sigmoid(logit);
  if (rng.uniform() < config_.label_flip) positive = !positive;
  return positive ? 1.0f : 0.0f;
}

Teacher::Components SyntheticSource::generate_one(const Streams& s, int64_t i, Scratch& scratch) const {
  const auto tables = static_cast<std::size_t>(features_.num_tables());
  scratch.lengths.resize(tables);
  scratch.ids.resize(static_cast<std::size_t>(max_ids_per_sample_));
  scratch.writable_bags.resize(tables);
  scratch.dense.resize(static_cast<std::size_t>(features_.num_dense));
  bag_lengths(s, i, scratch.lengths.data());
  int32_t* cursor = scratch.ids.data();
  for (std::size_t t = 0; t < tables; ++t) {
    scratch.writable_bags[t] = cursor;
    cursor += scratch.lengths[t];
  }
  return generate(s, i, scratch.lengths.data(), scratch.dense.data(), scratch.writable_bags.data(),
                  scratch.teacher);
}

void SyntheticSource::calibrate() {
  const Streams calibration = make_streams(hash_combine(config_.seed, kCalibrationStream));
  std::vector<Teacher::Components> parts(static_cast<std::size_t>(kCalibrationSamples));
#pragma omp parallel num_threads(threads_)
  {
    Scratch scratch;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < kCalibrationSamples; ++i)
      parts[static_cast<std::size_t>(i)] = generate_one(calibration, i, scratch);
  }
  Teacher::Normalisation norm;
  for (const auto& p : parts) {
    norm.linear_mean += p.linear;
    norm.pairs_mean += p.pairs;
  }
  const auto n = static_cast<double>(kCalibrationSamples);
  norm.linear_mean /= n;
  norm.pairs_mean /= n;
  double linear_var = 0.0, pairs_var = 0.0;
  for (const auto& p : parts) {
    linear_var += (p.linear - norm.linear_mean) * (p.linear - norm.linear_mean);
    pairs_var += (p.pairs - norm.pairs_mean) * (p.pairs - norm.pairs_mean);
  }
  // A part whose spread is at rounding level is constant (e.g. a single 1-row table).
  constexpr double kRelativeNoise = 1e-12;
  norm.linear_std = std::sqrt(linear_var / (n - 1));
  norm.pairs_std = std::sqrt(pairs_var / (n - 1));
  if (norm.linear_std <= kRelativeNoise * (1.0 + std::abs(norm.linear_mean))) norm.linear_std = 0.0;
  if (norm.pairs_std <= kRelativeNoise * (1.0 + std::abs(norm.pairs_mean))) norm.pairs_std = 0.0;
  teacher_.set_normalisation(norm);
}

bool SyntheticSource::next(Batch& batch, int64_t batch_size) {
  if (batch_size < 1) throw ConfigError(fmt::format("batch size {}: expected >= 1", batch_size));
  const int64_t n = std::min(batch_size, samples_ - position_);
  if (n <= 0) return false;
  const int tables = features_.num_tables();
  batch.reset(n, features_.num_dense, tables);
  batch.first_sample = position_;
  const int64_t first = position_;

  // Pass 1: bag lengths, stored one slot ahead in offsets so the prefix sum is in place.
#pragma omp parallel num_threads(threads_)
  {
    std::vector<int32_t> lengths(static_cast<std::size_t>(tables));
#pragma omp for schedule(static)
    for (int64_t b = 0; b < n; ++b) {
      bag_lengths(streams_, first + b, lengths.data());
      for (int t = 0; t < tables; ++t)
        batch.offsets[static_cast<std::size_t>(t * n + b + 1)] = lengths[static_cast<std::size_t>(t)];
    }
  }
  int64_t total = 0;
  for (std::size_t k = 1; k < batch.offsets.size(); ++k) {
    total += batch.offsets[k];
    if (total > std::numeric_limits<int32_t>::max())
      throw ConfigError(fmt::format("batch of {} samples holds more than 2^31-1 ids: reduce the batch size", n));
    batch.offsets[k] = static_cast<int32_t>(total);
  }
  batch.ids.resize(static_cast<std::size_t>(total));

  // Pass 2: features, ids and labels, each sample written at its own offsets.
#pragma omp parallel num_threads(threads_)
  {
    std::vector<int32_t> lengths(static_cast<std::size_t>(tables));
    std::vector<int32_t*> bags(static_cast<std::size_t>(tables));
    std::vector<double> teacher_scratch;
#pragma omp for schedule(static)
    for (int64_t b = 0; b < n; ++b) {
      for (int t = 0; t < tables; ++t) {
        const auto slot = static_cast<std::size_t>(t * n + b);
        lengths[static_cast<std::size_t>(t)] = batch.offsets[slot + 1] - batch.offsets[slot];
        bags[static_cast<std::size_t>(t)] = batch.ids.data() + batch.offsets[slot];
      }
      const Teacher::Components parts =
          generate(streams_, first + b, lengths.data(), batch.dense.data() + b * features_.num_dense, bags.data(),
                   teacher_scratch);
      batch.labels[static_cast<std::size_t>(b)] = draw_label(streams_, first + b, teacher_.logit(parts));
    }
  }
  position_ += n;
  return true;
}

void SyntheticSource::seek(int64_t sample) {
  if (sample < 0 || sample > samples_)
    throw DataError(fmt::format("synthetic {} split: cannot seek to sample {}: expected 0 to {}",
                                split_name(split_), sample, samples_));
  position_ = sample;
}

std::string SyntheticSource::describe() const {
  return fmt::format(
      "synthetic planted-teacher data ({} split: {} samples, {} dense, {} tables; seed {}, zipf {}, "
      "teacher dim {}, scale {}, label flip {}{})",
      split_name(split_), samples_, features_.num_dense, features_.num_tables(), config_.seed, config_.zipf_exponent,
      config_.teacher_dim, config_.teacher_scale, config_.label_flip,
      config_.raw_ids_per_row > 1
          ? fmt::format("; raw ids {}x the rows, hashed into them", config_.raw_ids_per_row)
          : std::string());
}

void SyntheticSource::sample(int64_t i, SyntheticSample& out) const {
  Scratch scratch;
  const Teacher::Components parts = generate_one(streams_, i, scratch);
  out.dense = scratch.dense;
  out.lengths = scratch.lengths;
  int64_t total = 0;
  for (int32_t len : scratch.lengths) total += len;
  out.ids.assign(scratch.ids.begin(), scratch.ids.begin() + total);
  out.logit = teacher_.logit(parts);
  out.label = draw_label(streams_, i, out.logit);
}

double SyntheticSource::teacher_logit(int64_t i) const {
  Scratch scratch;
  return teacher_.logit(generate_one(streams_, i, scratch));
}

double SyntheticSource::teacher_probability(int64_t i) const {
  double p = 0.0;
  teacher_probabilities(i, 1, &p);
  return p;
}

void SyntheticSource::teacher_probabilities(int64_t first, int64_t count, double* probabilities,
                                            float* labels) const {
  const double flip = config_.label_flip;
#pragma omp parallel num_threads(threads_) if (count > 1)
  {
    Scratch scratch;
#pragma omp for schedule(static)
    for (int64_t k = 0; k < count; ++k) {
      const double logit = teacher_.logit(generate_one(streams_, first + k, scratch));
      const double p = sigmoid(logit);
      probabilities[k] = p * (1.0 - flip) + (1.0 - p) * flip;
      if (labels != nullptr) labels[k] = draw_label(streams_, first + k, logit);
    }
  }
}

}  // namespace hetrec::data::data
