#include "data/batch_slice.h"

namespace hetrec::inline data {

Batch slice_batch(const Batch& batch, int64_t begin, int64_t count) {
  Batch out;
  out.size = count;
  out.num_dense = batch.num_dense;
  out.num_tables = batch.num_tables;
  out.first_sample = batch.first_sample + begin;
  out.dense.assign(batch.dense.begin() + begin * batch.num_dense, batch.dense.begin() + (begin + count) * batch.num_dense);
  if (!batch.labels.empty()) out.labels.assign(batch.labels.begin() + begin, batch.labels.begin() + begin + count);
  out.offsets.push_back(0);
  for (int t = 0; t < batch.num_tables; ++t) {
    const int64_t lo = batch.bag_begin(t, begin);
    const int64_t hi = batch.bag_begin(t, begin + count);
    const int32_t base = static_cast<int32_t>(out.ids.size());
    for (int64_t b = begin + 1; b <= begin + count; ++b)
      out.offsets.push_back(static_cast<int32_t>(base + batch.bag_begin(t, b) - lo));
    out.ids.insert(out.ids.end(), batch.ids.begin() + lo, batch.ids.begin() + hi);
  }
  return out;
}

Batch select_samples(const Batch& batch, const std::vector<int64_t>& samples) {
  Batch out;
  out.size = static_cast<int64_t>(samples.size());
  out.num_dense = batch.num_dense;
  out.num_tables = batch.num_tables;
  out.first_sample = batch.first_sample + (samples.empty() ? 0 : samples.front());
  for (int64_t b : samples) {
    out.dense.insert(out.dense.end(), batch.dense.begin() + b * batch.num_dense,
                     batch.dense.begin() + (b + 1) * batch.num_dense);
    if (!batch.labels.empty()) out.labels.push_back(batch.labels[static_cast<std::size_t>(b)]);
  }
  out.offsets.push_back(0);
  for (int t = 0; t < batch.num_tables; ++t)
    for (int64_t b : samples) {
      out.ids.insert(out.ids.end(), batch.ids.begin() + batch.bag_begin(t, b), batch.ids.begin() + batch.bag_end(t, b));
      out.offsets.push_back(static_cast<int32_t>(out.ids.size()));
    }
  return out;
}

}  // namespace hetrec::data::data
