#include "dist/shard_bags.h"

#include <cstring>

#include "core/error.h"

namespace hetrec::dist {

void cut_shard_bags(const Batch& batch, const std::vector<ShardLookup>& shards, int64_t begin, int64_t count,
                    Batch& out) {
  const auto num = static_cast<int64_t>(shards.size());
  out.size = count;
  out.num_dense = 0;
  out.num_tables = static_cast<int>(num);
  out.first_sample = batch.first_sample + begin;
  out.dense.clear();
  out.labels.clear();
  out.offsets.resize(static_cast<std::size_t>(num * count + 1));
  out.offsets[0] = 0;

  // First pass: each shard's id count (whole tables: their range; row blocks: counted),
  // so the second pass can fill every shard's ids in parallel at a known position.
  std::vector<int64_t> first_id(shards.size() + 1, 0);
  std::vector<std::string> error(shards.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < num; ++k) {
    const ShardLookup& s = shards[static_cast<std::size_t>(k)];
    const int64_t lo = batch.bag_begin(s.table, begin), hi = batch.bag_begin(s.table, begin + count);
    if (!s.row_block) {
      first_id[static_cast<std::size_t>(k) + 1] = hi - lo;
      continue;
    }
    int64_t kept = 0;
    for (int64_t i = lo; i < hi; ++i) {
      const int32_t id = batch.ids[static_cast<std::size_t>(i)];
      if (id < 0 || id >= s.full_rows) {
        if (error[static_cast<std::size_t>(k)].empty()) {
          int64_t b = begin;
          while (batch.bag_end(s.table, b) <= i) ++b;
          error[static_cast<std::size_t>(k)] =
              "embedding table \"" + s.name + "\" (table " + std::to_string(s.table) + "): sample " +
              std::to_string(b) + " of the batch (sample " + std::to_string(batch.first_sample + b) +
              " of its source) has id " + std::to_string(id) + ", expected an id in [0, " +
              std::to_string(s.full_rows) + ")";
        }
        continue;
      }
      kept += id >= s.row_begin && id < s.row_end;
    }
    first_id[static_cast<std::size_t>(k) + 1] = kept;
  }
  for (const std::string& e : error)
    if (!e.empty()) throw DataError(e);
  for (int64_t k = 0; k < num; ++k) first_id[static_cast<std::size_t>(k) + 1] += first_id[static_cast<std::size_t>(k)];
  out.ids.resize(static_cast<std::size_t>(first_id.back()));

#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < num; ++k) {
    const ShardLookup& s = shards[static_cast<std::size_t>(k)];
    const int64_t lo = batch.bag_begin(s.table, begin);
    int32_t* offsets = out.offsets.data() + k * count + 1;  // offsets of the bags' ends
    int32_t* ids = out.ids.data() + first_id[static_cast<std::size_t>(k)];
    const auto base = static_cast<int32_t>(first_id[static_cast<std::size_t>(k)]);
    if (!s.row_block) {
      const int64_t hi = batch.bag_begin(s.table, begin + count);
      std::memcpy(ids, batch.ids.data() + lo, static_cast<std::size_t>(hi - lo) * sizeof(int32_t));
      for (int64_t b = 0; b < count; ++b)
        offsets[b] = static_cast<int32_t>(base + batch.bag_end(s.table, begin + b) - lo);
      continue;
    }
    int32_t kept = 0;
    for (int64_t b = 0; b < count; ++b) {
      for (int64_t i = batch.bag_begin(s.table, begin + b); i < batch.bag_end(s.table, begin + b); ++i) {
        const int32_t id = batch.ids[static_cast<std::size_t>(i)];
        if (id >= s.row_begin && id < s.row_end) ids[kept++] = static_cast<int32_t>(id - s.row_begin);
      }
      offsets[b] = base + kept;
    }
  }
}

}  // namespace hetrec::dist
