#pragma once
// What each GPU of a data-parallel job holds, looks up and exchanges under a recipe's
// sharding, as the GPU engine builds it (model/gpu/sharded_embeddings.cpp): the step and
// memory models of several GPUs read it from here.
//
// Every rank reads the same global batch of B samples and trains its share B_r
// (data/batch_slice.h, share_begin). Its shards form up to three groups, each one
// GpuEmbeddings with its own lookup, fused backward and buffers:
//   whole       table_wise tables it owns and its row block of row_wise tables, full
//               width D; looked up and updated for all B samples;
//   column      its column slice of every column_wise table (one width per rank); looked
//               up and updated for all B samples, every id of the table;
//   replicated  every replicated table, whole; looked up for the rank's B_r samples,
//               updated over all B samples' gradients (all-gathered).
//
// Row blocks of row_wise tables: a block sees the ids that fall in its rows. Under the
// zipf law the synthetic data scrambles ids with a keyed permutation (data/synthetic.cpp),
// so hot rows are spread evenly: a block of k of the table's rows expects k/rows of its
// ids and of its distinct rows. Under the power law (e2e_bench's id = rows x u^a,
// unscrambled) the first block holds the hot rows: its ids are the law's mass on the
// block and its distinct rows the duplicates model summed over the block. Uniform ids:
// both rules agree.
#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "plan/id_distribution.h"
#include "plan/recipe.h"

namespace hetrec::inline plan {

// One shard of one table on one rank.
struct ShardLoad {
  int table = 0;               // model table index
  int64_t rows = 0;            // rows the shard holds
  bool host = false;           // rows and optimizer state in host memory
  double lookup_ids = 0.0;     // ids the forward looks up (expected)
  double lookup_unique = 0.0;  // distinct rows among them
  double update_ids = 0.0;     // ids the fused backward sorts and applies
  double update_unique = 0.0;  // distinct rows it updates
};

enum class ShardGroupKind { whole, column, replicated };

struct ShardGroup {
  ShardGroupKind kind = ShardGroupKind::whole;
  int width = 0;                // columns of every shard's rows
  double lookup_samples = 0.0;  // bags per table the forward pools
  double update_samples = 0.0;  // bags per table the backward reads
  std::vector<ShardLoad> shards;  // in model table order

  double lookup_ids() const;
  double update_ids() const;
  int64_t rows() const;
};

struct RankShards {
  int rank = 0;
  int64_t local_samples = 0;      // B_r
  std::vector<ShardGroup> groups;  // the non-empty groups, in the order whole, column, replicated
};

// The groups of every rank. With one GPU: rank 0 with one whole group of every table for
// the whole batch (the single-device engine). Throws ConfigError when the recipe does not
// match the model (validate_recipe).
std::vector<RankShards> rank_shards(const ModelConfig& model, const Recipe& recipe, const IdDistribution& ids);

// Table `t` whole, looked up and updated for `samples` bags (what one GPU does with it).
ShardLoad whole_table_load(const ModelConfig& model, std::size_t t, bool host, const IdDistribution& ids, double samples);

// Rows [first, last) of table `t` as a row_wise block: the ids of `samples` bags that fall
// in it, looked up and updated (the rules below).
ShardLoad row_block_load(const ModelConfig& model, std::size_t t, bool host, const IdDistribution& ids, double samples,
                         int64_t first, int64_t last);

// Expected share of a table's ids that fall in rows [first, last), and the distinct rows
// of that block among `draws` ids of the table (the rules above).
double row_block_id_share(const IdDistribution& ids, int64_t rows, int64_t first, int64_t last);
double row_block_unique_rows(const IdDistribution& ids, int64_t rows, int64_t first, int64_t last, double draws);

// The bytes of the embedding exchanges of one step (per direction; the backward sends
// the same bytes back). bytes[r][s]: what rank r sends rank s in the forward; E: the
// recipe's exchange element size (4 for fp32, 2 for bf16).
struct ExchangeBytes {
  std::vector<std::vector<double>> whole;       // B_s x (rank r's whole shards) x D x E
  std::vector<std::vector<double>> column;      // B_s x (rank r's column shards) x width_r x E
  std::vector<std::vector<double>> replicated;  // backward all-gather: B_r x R x D x 4 to every rank
  // Columns per sample of each rank's routed shards: whole width (table_wise owned, row
  // blocks) and column slices; and of the replicated tables (every rank).
  std::vector<int64_t> whole_columns, column_columns;
  int64_t replicated_columns = 0;
  // The pooled pieces a rank assembles X from (a row_wise table gives one piece per rank,
  // a column_wise table one slice per rank, any other table one piece of D columns), and
  // their columns per sample.
  int64_t pieces = 0;
  int64_t piece_columns = 0;
};
ExchangeBytes exchange_bytes(const ModelConfig& model, const Recipe& recipe);

}  // namespace hetrec::plan::plan
