#include "data/batch_assembler.h"

#include <algorithm>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

namespace hetrec::inline data {

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

void BatchAssembler::add_table_bags(int64_t n, const std::function<Bags(int)>& bags_of) {
  const auto tables = static_cast<std::size_t>(num_tables_);
  std::vector<Bags> bags(tables);
  std::vector<int64_t> old_size(tables), counts(tables);
  for (std::size_t t = 0; t < tables; ++t) {
    HETREC_CHECK(static_cast<int64_t>(lengths_[t].size()) + n == size(), "add_table_bags: one bag per table per sample");
    bags[t] = bags_of(static_cast<int>(t));
    lengths_[t].insert(lengths_[t].end(), bags[t].lengths, bags[t].lengths + n);
    old_size[t] = static_cast<int64_t>(ids_[t].size());
    counts[t] = bags[t].count;
    ids_[t].resize(static_cast<std::size_t>(old_size[t] + counts[t]));  // uninitialised: overwritten below
  }
  const std::vector<ChunkRange> ranges = chunk_ranges(counts);
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
  for (std::size_t r = 0; r < ranges.size(); ++r) {
    const ChunkRange& c = ranges[r];
    std::copy(bags[c.array].ids + c.begin, bags[c.array].ids + c.end,
              ids_[c.array].begin() + old_size[c.array] + c.begin);
  }
}

void BatchAssembler::finish(Batch& out, int64_t first_sample) {
  const int64_t n = size();
  const auto tables = static_cast<std::size_t>(num_tables_);
  // Where each table's ids start in the batch; checked before anything is written.
  std::vector<int64_t> id_start(tables + 1, 0), counts(tables);
  for (std::size_t t = 0; t < tables; ++t) {
    HETREC_CHECK(static_cast<int64_t>(lengths_[t].size()) == n, "finish: every sample needs a bag in every table");
    counts[t] = static_cast<int64_t>(ids_[t].size());
    id_start[t + 1] = id_start[t] + counts[t];
  }
  const int64_t total = id_start[tables];
  if (total > std::numeric_limits<int32_t>::max())
    throw DataError(fmt::format("a batch of {} samples holds {} ids, more than 2^31-1: reduce the batch size",
                                n, total));
  // Every element below is written, so storage of the right size is reused as it is.
  out.size = n;
  out.num_dense = num_dense_;
  out.num_tables = num_tables_;
  out.first_sample = first_sample;
  out.labels.resize(static_cast<std::size_t>(n));
  out.dense.resize(dense_.size());
  out.offsets.resize(tables * static_cast<std::size_t>(n) + 1);
  out.ids.resize(static_cast<std::size_t>(total));
  std::copy(labels_.begin(), labels_.end(), out.labels.begin());
  std::copy(dense_.begin(), dense_.end(), out.dense.begin());
  out.offsets[0] = 0;
  const std::vector<ChunkRange> ranges = chunk_ranges(counts);
#pragma omp parallel num_threads(threads_)
  {
#pragma omp for schedule(dynamic, 1) nowait
    for (std::size_t t = 0; t < tables; ++t) {
      auto offset = static_cast<int32_t>(id_start[t]);
      std::size_t slot = t * static_cast<std::size_t>(n) + 1;
      for (int32_t len : lengths_[t]) {
        offset += len;
        out.offsets[slot++] = offset;
      }
    }
#pragma omp for schedule(dynamic, 1)
    for (std::size_t r = 0; r < ranges.size(); ++r) {
      const ChunkRange& c = ranges[r];
      std::copy(ids_[c.array].begin() + c.begin, ids_[c.array].begin() + c.end, out.ids.begin() + id_start[c.array] + c.begin);
    }
  }
}

}  // namespace hetrec::data::data
