#include "dist/sharding.h"

#include "core/error.h"

namespace hetrec::dist {

const char* sharding_type_name(ShardingType type) {
  switch (type) {
    case ShardingType::table_wise: return "table_wise";
    case ShardingType::row_wise: return "row_wise";
    case ShardingType::column_wise: return "column_wise";
    default: return "replicated";
  }
}

ShardingType parse_sharding_type(const std::string& name, const std::string& key) {
  for (ShardingType t : {ShardingType::table_wise, ShardingType::row_wise, ShardingType::column_wise,
                         ShardingType::replicated})
    if (name == sharding_type_name(t)) return t;
  throw ConfigError("config key '" + key + "': unknown sharding type '" + name +
                    "', expected one of table_wise, row_wise, column_wise, replicated");
}

float exchanged_value(float value, DType exchange_dtype) {
  return exchange_dtype == DType::bf16 ? bf16_to_f32(f32_to_bf16(value)) : value;
}

ShardingPlan plan_sharding(const ShardingSpec& spec, const std::vector<TableConfig>& tables, int dim,
                           int world_size) {
  if (world_size < 1) throw InternalError("plan_sharding: world size " + std::to_string(world_size));
  for (const auto& [name, choice] : spec.tables) {
    bool known = false;
    for (const auto& t : tables) known = known || t.name == name;
    if (!known) {
      std::string names;
      for (const auto& t : tables) names += (names.empty() ? "" : ", ") + t.name;
      throw ConfigError("config key '" + spec.source + ".tables." + name + "': the model has no table '" + name +
                        "' (tables: " + names + ")");
    }
  }
  if (spec.exchange_dtype != DType::f32 && spec.exchange_dtype != DType::bf16)
    throw ConfigError("config key '" + spec.source + ".exchange_dtype' = \"" + std::string(dtype_name(spec.exchange_dtype)) +
                      "\": expected \"fp32\" or \"bf16\"");
  ShardingPlan plan;
  plan.world_size = world_size;
  plan.exchange_dtype = spec.exchange_dtype;
  const auto n = static_cast<std::size_t>(world_size);
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const TableConfig& table = tables[t];
    const std::string key = spec.source + ".tables." + table.name;
    TableShardingChoice choice{spec.default_type, -1};
    if (auto it = spec.tables.find(table.name); it != spec.tables.end()) choice = it->second;
    TableShard shard;
    shard.type = choice.type;
    shard.row_begin.assign(n, 0);
    shard.row_end.assign(n, table.rows);
    shard.col_begin.assign(n, 0);
    shard.col_end.assign(n, dim);
    switch (choice.type) {
      case ShardingType::table_wise:
        shard.owner = choice.owner >= 0 ? choice.owner : static_cast<int>(t % n);
        if (shard.owner >= world_size)
          throw ConfigError("config key '" + key + ".rank' = " + std::to_string(shard.owner) +
                            ": expected a rank in [0, " + std::to_string(world_size) + ") for a job of " +
                            std::to_string(world_size) + " ranks");
        for (std::size_t r = 0; r < n; ++r)
          if (static_cast<int>(r) != shard.owner) shard.row_end[r] = shard.col_end[r] = 0;
        break;
      case ShardingType::row_wise:
        if (table.rows < world_size)
          throw ConfigError("config key '" + key + "' (row_wise): table '" + table.name + "' has " +
                            std::to_string(table.rows) + " rows, fewer than the " + std::to_string(world_size) +
                            " ranks; use table_wise or replicated for it");
        if (!choice.row_bounds.empty()) {
          const std::vector<int64_t>& b = choice.row_bounds;
          if (b.size() != n + 1)
            throw ConfigError("config key '" + key + ".row_bounds': " + std::to_string(b.size()) + " values for " +
                              std::to_string(world_size) + " ranks; expected " + std::to_string(n + 1) +
                              " (0, each next block's first row, then the table's " + std::to_string(table.rows) +
                              " rows)");
          if (b.front() != 0 || b.back() != table.rows)
            throw ConfigError("config key '" + key + ".row_bounds': expected it to start at 0 and end at the table's " +
                              std::to_string(table.rows) + " rows, got " + std::to_string(b.front()) + " ... " +
                              std::to_string(b.back()));
          for (std::size_t r = 0; r < n; ++r) {
            if (b[r + 1] <= b[r])
              throw ConfigError("config key '" + key + ".row_bounds': values must increase (every rank holds at "
                                "least one row), got " + std::to_string(b[r]) + " then " + std::to_string(b[r + 1]));
            shard.row_begin[r] = b[r];
            shard.row_end[r] = b[r + 1];
          }
          break;
        }
        for (std::size_t r = 0; r < n; ++r) {
          shard.row_begin[r] = table.rows * static_cast<int64_t>(r) / world_size;
          shard.row_end[r] = table.rows * static_cast<int64_t>(r + 1) / world_size;
        }
        break;
      case ShardingType::column_wise: {
        const int pairs = dim / 2;
        if (pairs < world_size)
          throw ConfigError("config key '" + key + "' (column_wise): model.embedding_dim = " + std::to_string(dim) +
                            " gives some of the " + std::to_string(world_size) +
                            " ranks fewer than 2 columns; column_wise needs embedding_dim >= 2 x ranks");
        for (std::size_t r = 0; r < n; ++r) {
          shard.col_begin[r] = 2 * (pairs * static_cast<int>(r) / world_size);
          shard.col_end[r] = r + 1 == n ? dim : 2 * (pairs * static_cast<int>(r + 1) / world_size);
        }
        break;
      }
      case ShardingType::replicated: break;
    }
    if (choice.type != ShardingType::row_wise && !choice.row_bounds.empty())
      throw ConfigError("config key '" + key + ".row_bounds': only a row_wise table has row blocks, this one is " +
                        sharding_type_name(choice.type));
    if (choice.type != ShardingType::table_wise && choice.owner >= 0)
      throw ConfigError("config key '" + key + ".rank': only a table_wise table has an owner rank, this one is " +
                        sharding_type_name(choice.type));
    plan.tables.push_back(std::move(shard));
  }
  return plan;
}

}  // namespace hetrec::dist
