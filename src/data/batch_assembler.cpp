#include "data/batch_assembler.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"

namespace hetrec {

void BatchAssembler::begin(int num_dense, int num_tables) {
  num_dense_ = num_dense;
  num_tables_ = num_tables;
  labels_.clear();
  dense_.clear();
  lengths_.resize(static_cast<std::size_t>(num_tables));
  ids_.resize(static_cast<std::size_t>(num_tables));
  for (auto& v : lengths_) v.clear();
  for (auto& v : ids_) v.clear();
}

void BatchAssembler::add_sample(float label, const float* dense) {
  labels_.push_back(label);
  dense_.insert(dense_.end(), dense, dense + num_dense_);
}

void BatchAssembler::add_bag(int table, const int32_t* ids, int64_t count) {
  auto& lengths = lengths_[static_cast<std::size_t>(table)];
  HETREC_CHECK(static_cast<int64_t>(lengths.size()) + 1 == size(), "add_bag: one bag per table per sample");
  lengths.push_back(static_cast<int32_t>(count));
  ids_[static_cast<std::size_t>(table)].insert(ids_[static_cast<std::size_t>(table)].end(), ids, ids + count);
}

void BatchAssembler::add_samples(int64_t n, const float* labels, const float* dense) {
  labels_.insert(labels_.end(), labels, labels + n);
  dense_.insert(dense_.end(), dense, dense + n * num_dense_);
}

void BatchAssembler::add_bags(int table, const int32_t* lengths, int64_t n, const int32_t* ids, int64_t count) {
  auto& staged = lengths_[static_cast<std::size_t>(table)];
  HETREC_CHECK(static_cast<int64_t>(staged.size()) + n == size(), "add_bags: one bag per table per sample");
  staged.insert(staged.end(), lengths, lengths + n);
  auto& staged_ids = ids_[static_cast<std::size_t>(table)];
  staged_ids.insert(staged_ids.end(), ids, ids + count);
}

void BatchAssembler::finish(Batch& out, int64_t first_sample) {
  const int64_t n = size();
  out.reset(n, num_dense_, num_tables_);
  out.first_sample = first_sample;
  std::copy(labels_.begin(), labels_.end(), out.labels.begin());
  std::copy(dense_.begin(), dense_.end(), out.dense.begin());
  int64_t total = 0;
  for (const auto& ids : ids_) total += static_cast<int64_t>(ids.size());
  if (total > std::numeric_limits<int32_t>::max())
    throw DataError(fmt::format("a batch of {} samples holds {} ids, more than 2^31-1: reduce the batch size",
                                n, total));
  out.ids.resize(static_cast<std::size_t>(total));
  int32_t offset = 0;
  std::size_t slot = 1;
  auto id_out = out.ids.begin();
  for (int t = 0; t < num_tables_; ++t) {
    const auto& lengths = lengths_[static_cast<std::size_t>(t)];
    HETREC_CHECK(static_cast<int64_t>(lengths.size()) == n, "finish: every sample needs a bag in every table");
    for (int32_t len : lengths) {
      offset += len;
      out.offsets[slot++] = offset;
    }
    id_out = std::copy(ids_[static_cast<std::size_t>(t)].begin(), ids_[static_cast<std::size_t>(t)].end(), id_out);
  }
}

}  // namespace hetrec
