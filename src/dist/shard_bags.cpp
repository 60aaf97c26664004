#include "dist/shard_bags.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace hetrec::dist {
namespace {

// Samples per unit of parallel work: every shard is split by samples (one hot table can
// hold most of a batch's ids, so splitting by shard would leave the cores idle).
constexpr int64_t kSamplesPerChunk = 2048;

std::string bad_id_message(const Batch& batch, const ShardLookup& s, int64_t sample, int32_t id) {
  return "embedding table \"" + s.name + "\" (table " + std::to_string(s.table) + "): sample " +
         std::to_string(sample) + " of the batch (sample " + std::to_string(batch.first_sample + sample) +
         " of its source) has id " + std::to_string(id) + ", expected an id in [0, " + std::to_string(s.full_rows) + ")";
}

}  // namespace

ShardBagsLayout measure_shard_bags(const Batch& batch, const std::vector<ShardLookup>& shards, int64_t begin,
                                   int64_t count) {
  const auto num = static_cast<int64_t>(shards.size());
  ShardBagsLayout layout;
  layout.begin = begin;
  layout.count = count;
  layout.chunks = std::max<int64_t>(1, (count + kSamplesPerChunk - 1) / kSamplesPerChunk);
  const int64_t chunks = layout.chunks;
  // The ids each (shard, chunk of samples) keeps: whole tables their range, row blocks
  // those in the block (and the first id outside the table is reported).
  std::vector<int64_t>& kept = layout.first_id;
  kept.assign(static_cast<std::size_t>(num * chunks) + 1, 0);
  std::vector<std::string> error(static_cast<std::size_t>(num * chunks));
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
  for (int64_t k = 0; k < num; ++k)
    for (int64_t c = 0; c < chunks; ++c) {
      const ShardLookup& s = shards[static_cast<std::size_t>(k)];
      const int64_t b0 = begin + c * kSamplesPerChunk, b1 = begin + std::min(count, (c + 1) * kSamplesPerChunk);
      int64_t n = 0;
      if (!s.row_block) {
        n = batch.bag_begin(s.table, b1) - batch.bag_begin(s.table, b0);
      } else {
        for (int64_t b = b0; b < b1; ++b)
          for (int64_t i = batch.bag_begin(s.table, b); i < batch.bag_end(s.table, b); ++i) {
            const int32_t id = batch.ids[static_cast<std::size_t>(i)];
            if (id < 0 || id >= s.full_rows) {
              std::string& e = error[static_cast<std::size_t>(k * chunks + c)];
              if (e.empty()) e = bad_id_message(batch, s, b, id);
              continue;
            }
            n += id >= s.row_begin && id < s.row_end;
          }
      }
      kept[static_cast<std::size_t>(k * chunks + c) + 1] = n;
    }
  for (const std::string& e : error)
    if (!e.empty()) throw DataError(e);
  for (std::size_t i = 1; i < kept.size(); ++i) kept[i] += kept[i - 1];  // first id of each (shard, chunk)
  return layout;
}

void write_shard_bags(const Batch& batch, const std::vector<ShardLookup>& shards, const ShardBagsLayout& layout,
                      int32_t* out_offsets, int32_t* out_ids) {
  const auto num = static_cast<int64_t>(shards.size());
  const int64_t begin = layout.begin, count = layout.count, chunks = layout.chunks;
  out_offsets[0] = 0;
  // Every (shard, chunk) writes its ids and bag ends at the positions the layout fixed.
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
  for (int64_t k = 0; k < num; ++k)
    for (int64_t c = 0; c < chunks; ++c) {
      const ShardLookup& s = shards[static_cast<std::size_t>(k)];
      const int64_t first = c * kSamplesPerChunk, last = std::min(count, (c + 1) * kSamplesPerChunk);
      const int64_t at = layout.first_id[static_cast<std::size_t>(k * chunks + c)];
      int32_t* offsets = out_offsets + k * count + 1;  // bag ends
      int32_t* ids = out_ids + at;
      if (!s.row_block) {
        const int64_t lo = batch.bag_begin(s.table, begin + first);
        const int64_t hi = batch.bag_begin(s.table, begin + last);
        std::memcpy(ids, batch.ids.data() + lo, static_cast<std::size_t>(hi - lo) * sizeof(int32_t));
        for (int64_t b = first; b < last; ++b)
          offsets[b] = static_cast<int32_t>(at + batch.bag_end(s.table, begin + b) - lo);
        continue;
      }
      int64_t n = 0;
      for (int64_t b = first; b < last; ++b) {
        for (int64_t i = batch.bag_begin(s.table, begin + b); i < batch.bag_end(s.table, begin + b); ++i) {
          const int32_t id = batch.ids[static_cast<std::size_t>(i)];
          if (id >= s.row_begin && id < s.row_end) ids[n++] = static_cast<int32_t>(id - s.row_begin);
        }
        offsets[b] = static_cast<int32_t>(at + n);
      }
    }
}

void cut_shard_bags(const Batch& batch, const std::vector<ShardLookup>& shards, int64_t begin, int64_t count,
                    Batch& out) {
  const ShardBagsLayout layout = measure_shard_bags(batch, shards, begin, count);
  out.size = count;
  out.num_dense = 0;
  out.num_tables = static_cast<int>(shards.size());
  out.first_sample = batch.first_sample + begin;
  out.dense.clear();
  out.labels.clear();
  out.offsets.resize(static_cast<std::size_t>(static_cast<int64_t>(shards.size()) * count + 1));
  out.ids.resize(static_cast<std::size_t>(layout.ids()));
  write_shard_bags(batch, shards, layout, out.offsets.data(), out.ids.data());
}

}  // namespace hetrec::dist
