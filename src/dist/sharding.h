#pragma once
// How the embedding tables are placed on the ranks of a job. The recipe (or config) names
// a sharding type per table, with a default; plan_sharding resolves it for a world size:
//   table_wise   one rank (the owner) holds the whole table
//   row_wise     rank r holds rows [rows*r/N, rows*(r+1)/N), or the blocks the spec's
//                row_bounds give
//   column_wise  rank r holds columns [col_bounds[r], col_bounds[r+1]) of every row;
//                bounds are even (so 16-bit rows keep their rounding draws in pairs)
//   replicated   every rank holds the whole table (data parallel)
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "data/feature_spec.h"

namespace hetrec::dist {

enum class ShardingType { table_wise, row_wise, column_wise, replicated };

const char* sharding_type_name(ShardingType type);

struct TableShardingChoice {
  ShardingType type = ShardingType::table_wise;
  int owner = -1;  // table_wise: the owning rank (-1: table index modulo the world size)
  // row_wise: the blocks' first rows and the table's row count, N + 1 increasing values
  // from 0 (rank r holds [row_bounds[r], row_bounds[r+1])); empty: blocks of equal rows.
  // Uneven blocks balance a table whose hot ids cluster in some rows.
  std::vector<int64_t> row_bounds{};
};

// What the user wrote: [recipe.sharding] default = "...", and per table
// [recipe.sharding.tables.<name>] type = "...", rank = R (table_wise), row_bounds =
// [0, ..., rows] (row_wise).
struct ShardingSpec {
  ShardingType default_type = ShardingType::table_wise;
  std::map<std::string, TableShardingChoice> tables;
  // The element type of the pooled embeddings' all-to-alls and of their gradients'
  // (exchange_dtype = "fp32" | "bf16"): bf16 halves the bytes on the links and rounds
  // every routed pooled vector and its gradient to nearest even on the way.
  DType exchange_dtype = DType::f32;
  std::string source = "recipe.sharding";  // key prefix for messages
};

struct TableShard {
  ShardingType type = ShardingType::table_wise;
  int owner = 0;  // table_wise
  // The block rank r holds: rows [row_begin[r], row_end[r]), columns [col_begin[r],
  // col_end[r]); empty (0, 0) when r holds nothing of the table.
  std::vector<int64_t> row_begin, row_end;
  std::vector<int> col_begin, col_end;

  bool holds(int rank) const { return row_end[static_cast<std::size_t>(rank)] > row_begin[static_cast<std::size_t>(rank)]; }
  int64_t rows_of(int rank) const { return row_end[static_cast<std::size_t>(rank)] - row_begin[static_cast<std::size_t>(rank)]; }
  int cols_of(int rank) const { return col_end[static_cast<std::size_t>(rank)] - col_begin[static_cast<std::size_t>(rank)]; }
  // Ranks a lookup of this table is routed to (replicated: none, it is served locally).
  bool routed() const { return type != ShardingType::replicated; }
};

struct ShardingPlan {
  int world_size = 1;
  std::vector<TableShard> tables;  // one per model table, in model order
  DType exchange_dtype = DType::f32;  // f32 or bf16 (ShardingSpec::exchange_dtype)
};

// Rounds a value as an exchange of `exchange_dtype` carries it (bf16: to nearest even;
// f32: unchanged).
float exchanged_value(float value, DType exchange_dtype);

// Resolves `spec` for `world_size` ranks. Throws ConfigError naming the key
// (<source>.tables.<name>, <source>.tables.<name>.rank, ...) for a table name the model
// does not have, an owner outside [0, N), a row_wise table with fewer rows than ranks,
// or a column_wise table whose dim gives some rank fewer than 2 columns.
ShardingPlan plan_sharding(const ShardingSpec& spec, const std::vector<TableConfig>& tables, int dim,
                           int world_size);

// Parses a sharding type name ("table_wise", ...); throws ConfigError naming `key`.
ShardingType parse_sharding_type(const std::string& name, const std::string& key);

}  // namespace hetrec::dist
