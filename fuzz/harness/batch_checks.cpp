#include "harness/batch_checks.h"

#include <cmath>
#include <string>

#include "harness/fuzz_support.h"

namespace hetrec::fuzz {

void check_batch(const Batch& batch, int num_dense, const std::vector<int64_t>& rows, int64_t max_size,
                 int64_t first_sample) {
  const auto tables = static_cast<int64_t>(rows.size());
  const int64_t b = batch.size;
  if (b < 1 || b > max_size) finding("batch of " + std::to_string(b) + " samples, asked for " + std::to_string(max_size));
  if (batch.first_sample != first_sample)
    finding("batch starts at sample " + std::to_string(batch.first_sample) + ", expected " + std::to_string(first_sample));
  if (batch.num_dense != num_dense || batch.num_tables != tables) finding("batch shape differs from its source");
  if (static_cast<int64_t>(batch.dense.size()) != b * num_dense || static_cast<int64_t>(batch.labels.size()) != b ||
      static_cast<int64_t>(batch.offsets.size()) != tables * b + 1)
    finding("batch buffers have the wrong sizes");
  for (float y : batch.labels)
    if (y != 0.0f && y != 1.0f) finding("label " + std::to_string(y) + " is not 0 or 1");
  for (float x : batch.dense)
    if (!std::isfinite(x)) finding("a dense feature is not finite");
  if (batch.offsets.front() != 0 || batch.offsets.back() != static_cast<int64_t>(batch.ids.size()))
    finding("bag offsets do not span the ids");
  for (int64_t t = 0; t < tables; ++t)
    for (int64_t s = 0; s < b; ++s) {
      const int64_t begin = batch.bag_begin(static_cast<int>(t), s), end = batch.bag_end(static_cast<int>(t), s);
      if (end < begin) finding("bag offsets decrease");
      for (int64_t k = begin; k < end; ++k) {
        const int32_t id = batch.ids[static_cast<std::size_t>(k)];
        if (id < 0 || id >= rows[static_cast<std::size_t>(t)])
          finding("table " + std::to_string(t) + ": id " + std::to_string(id) + " outside [0, " +
                  std::to_string(rows[static_cast<std::size_t>(t)]) + ")");
      }
    }
}

}  // namespace hetrec::fuzz
