#pragma once
// The bags one rank's embedding shards look up, cut from a batch on the host: one table
// slot per shard, in the rank's shard order. A whole table (table_wise, column_wise,
// replicated) keeps its bags as they are; a row_wise block keeps only the ids of its rows,
// renumbered from the block's first row (its partial sums are added up by the sample's
// rank, so every id lands in exactly one block).
#include <cstdint>
#include <string>
#include <vector>

#include "data/batch.h"

namespace hetrec::dist {

struct ShardLookup {
  int table = 0;           // the model table (slot of the source batch)
  bool row_block = false;  // keep only ids in [row_begin, row_end), minus row_begin
  int64_t row_begin = 0;
  int64_t row_end = 0;
  int64_t full_rows = 0;   // row blocks: ids outside [0, full_rows) are errors
  std::string name;        // the table's name, for messages
};

// Where every shard's ids go, from a first pass over the batch (measure_shard_bags):
// ids are cut in chunks of samples, in parallel.
struct ShardBagsLayout {
  int64_t begin = 0, count = 0;  // the samples
  int64_t chunks = 0;            // chunks of samples per shard
  std::vector<int64_t> first_id;  // [shard * chunks + chunk]: first id it writes; back(): the id count
  int64_t ids() const { return first_id.empty() ? 0 : first_id.back(); }
};

// Pass 1: counts the ids each shard keeps. Throws DataError as cut_shard_bags does.
ShardBagsLayout measure_shard_bags(const Batch& batch, const std::vector<ShardLookup>& shards, int64_t begin,
                                   int64_t count);
// Pass 2: writes shards.size() x count + 1 offsets and layout.ids() ids (the CSR of cut_shard_bags)
// to `offsets` and `ids` (e.g. page-locked staging memory).
void write_shard_bags(const Batch& batch, const std::vector<ShardLookup>& shards, const ShardBagsLayout& layout,
                      int32_t* offsets, int32_t* ids);

// Writes into `out` (buffers reused between calls) the bags of `shards` for samples
// [begin, begin + count) of `batch`: out.size = count, out.num_tables = shards.size(),
// no dense features and no labels. Throws DataError naming the table, the sample and
// the id for an id of a row block's table outside the table (every rank holds a block
// of a row_wise table, so every rank reports it before any collective of the step).
void cut_shard_bags(const Batch& batch, const std::vector<ShardLookup>& shards, int64_t begin, int64_t count,
                    Batch& out);

}  // namespace hetrec::dist
