#include "data/batch_checks.h"

#include <string>

#include "core/error.h"

namespace hetrec::inline data {

void check_batch_shape(const Batch& batch, int num_dense, int num_tables, bool need_labels) {
  const auto expect = [&](bool ok, const std::string& what) {
    if (!ok) throw DataError("batch from sample " + std::to_string(batch.first_sample) + ": " + what);
  };
  expect(batch.size > 0, "expected at least one sample, got " + std::to_string(batch.size));
  expect(batch.num_dense == num_dense, "has " + std::to_string(batch.num_dense) +
                                           " dense features, the model (model.num_dense) expects " +
                                           std::to_string(num_dense));
  expect(batch.num_tables == num_tables, "has " + std::to_string(batch.num_tables) +
                                             " sparse features, the model has " + std::to_string(num_tables) +
                                             " tables");
  expect(static_cast<int64_t>(batch.dense.size()) == batch.size * batch.num_dense,
         "dense holds " + std::to_string(batch.dense.size()) + " values, expected size x num_dense = " +
             std::to_string(batch.size * batch.num_dense));
  if (need_labels)
    expect(static_cast<int64_t>(batch.labels.size()) == batch.size,
           "labels holds " + std::to_string(batch.labels.size()) + " values, expected " + std::to_string(batch.size));
}

void check_bag_offsets(const Batch& batch, int num_tables) {
  const int64_t b_size = batch.size;
  if (batch.num_tables != num_tables || batch.offsets.size() != static_cast<std::size_t>(num_tables * b_size + 1))
    throw DataError("batch (first sample " + std::to_string(batch.first_sample) + "): expected " +
                    std::to_string(num_tables) + " sparse features and tables x samples + 1 = " +
                    std::to_string(num_tables * b_size + 1) + " offsets, got " + std::to_string(batch.num_tables) +
                    " features and " + std::to_string(batch.offsets.size()) + " offsets");
  if (batch.offsets.front() != 0 || static_cast<std::size_t>(batch.offsets.back()) != batch.ids.size())
    throw DataError("batch (first sample " + std::to_string(batch.first_sample) +
                    "): offsets must start at 0 and end at the id count " + std::to_string(batch.ids.size()));
  // Find the first decreasing entry in parallel (the offsets have tables x samples
  // entries: millions for a large batch).
  const auto n = static_cast<int64_t>(batch.offsets.size());
  int64_t first_bad = n;
#pragma omp parallel for reduction(min : first_bad) schedule(static)
  for (int64_t i = 1; i < n; ++i)
    if (batch.offsets[static_cast<std::size_t>(i)] < batch.offsets[static_cast<std::size_t>(i - 1)] && i < first_bad)
      first_bad = i;
  if (first_bad < n)
    throw DataError("batch (first sample " + std::to_string(batch.first_sample) + "): offsets[" +
                    std::to_string(first_bad) + "] = " + std::to_string(batch.offsets[static_cast<std::size_t>(first_bad)]) +
                    " is below offsets[" + std::to_string(first_bad - 1) + "], expected non-decreasing offsets");
}

void check_bag_ids(const Batch& batch, const std::vector<TableConfig>& tables) {
  const int num = static_cast<int>(tables.size());
  check_bag_offsets(batch, num);
  for (int t = 0; t < num; ++t) {
    const TableConfig& c = tables[static_cast<std::size_t>(t)];
    for (int64_t b = 0; b < batch.size; ++b)
      for (int64_t i = batch.bag_begin(t, b); i < batch.bag_end(t, b); ++i) {
        const int32_t id = batch.ids[static_cast<std::size_t>(i)];
        if (id >= 0 && id < c.rows) continue;
        throw DataError("embedding table \"" + c.name + "\" (table " + std::to_string(t) + "): sample " +
                        std::to_string(b) + " of the batch (sample " + std::to_string(batch.first_sample + b) +
                        " of its source) has id " + std::to_string(id) + ", expected an id in [0, " +
                        std::to_string(c.rows) + ")");
      }
  }
}

}  // namespace hetrec::data::data
