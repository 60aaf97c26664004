#include "plan/recipe.h"

#include <string>

#include "core/error.h"

namespace hetrec::inline plan {

int Recipe::host_tables() const {
  int n = 0;
  for (TablePlacement p : placement) n += p == TablePlacement::host;
  return n;
}

int Recipe::sharded_tables(dist::ShardingType type) const {
  int n = 0;
  for (const TableSharding& s : sharding) n += s.type == type;
  return n;
}

std::string_view dense_precision_name(DensePrecision p) {
  switch (p) {
    case DensePrecision::fp32: return "fp32";
    case DensePrecision::tf32: return "tf32";
    case DensePrecision::bf16: return "bf16";
    case DensePrecision::fp16: return "fp16";
  }
  return "?";
}

DensePrecision parse_dense_precision(std::string_view name, std::string_view key) {
  for (DensePrecision p : kAllDensePrecisions)
    if (dense_precision_name(p) == name) return p;
  throw ConfigError(std::string(key) + ": expected a dense precision fp32, tf32, bf16 or fp16, got '" + std::string(name) +
                    "'");
}

std::string_view placement_name(TablePlacement p) { return p == TablePlacement::hbm ? "hbm" : "host"; }

Recipe recipe_of_model(const ModelConfig& model, int64_t batch, const std::string& hardware) {
  Recipe r;
  r.hardware = hardware;
  r.batch = batch;
  r.dense = model.dense_dtype == DType::bf16 ? DensePrecision::bf16
            : model.dense_dtype == DType::f16 ? DensePrecision::fp16
            : model.allow_tf32                ? DensePrecision::tf32
                                              : DensePrecision::fp32;
  r.row_dtype = model.row_dtype;
  r.cross_residual_16bit = model.cross_residual_16bit;
  r.unaligned_tf32 = model.unaligned_tf32;
  r.placement.assign(model.tables.size(), TablePlacement::hbm);
  for (std::size_t t = 0; t < model.tables.size(); ++t)
    for (const std::string& name : model.host_tables)
      if (model.tables[t].name == name) r.placement[t] = TablePlacement::host;
  return r;
}

void apply_sharding(Recipe& recipe, const ModelConfig& model, const dist::ShardingSpec& spec, int gpus) {
  if (gpus < 1) throw ConfigError("recipe for '" + recipe.hardware + "': gpus must be >= 1, got " + std::to_string(gpus));
  recipe.gpus = gpus;
  recipe.sharding.clear();
  recipe.exchange_dtype = DType::f32;
  if (gpus == 1) return;
  const dist::ShardingPlan plan = dist::plan_sharding(spec, model.tables, model.embedding_dim, gpus);
  recipe.exchange_dtype = plan.exchange_dtype;
  for (std::size_t i = 0; i < plan.tables.size(); ++i) {
    const dist::TableShard& t = plan.tables[i];
    TableSharding s{t.type, t.type == dist::ShardingType::table_wise ? t.owner : 0, {}};
    // Uneven blocks stay as the spec gave them; even ones are the default (no bounds).
    if (const auto it = spec.tables.find(model.tables[i].name); it != spec.tables.end())
      s.row_bounds = it->second.row_bounds;
    recipe.sharding.push_back(std::move(s));
  }
}

dist::ShardingSpec sharding_spec(const Recipe& recipe, const ModelConfig& model) {
  dist::ShardingSpec spec;
  for (std::size_t t = 0; t < recipe.sharding.size() && t < model.tables.size(); ++t) {
    const TableSharding& s = recipe.sharding[t];
    spec.tables[model.tables[t].name] = {s.type, s.type == dist::ShardingType::table_wise ? s.owner : -1, s.row_bounds};
  }
  if (recipe.gpus == 1)
    for (const TableConfig& c : model.tables) spec.tables[c.name] = {dist::ShardingType::table_wise, 0};
  else
    spec.exchange_dtype = recipe.exchange_dtype;
  return spec;
}

dist::ShardingPlan sharding_plan(const Recipe& recipe, const ModelConfig& model) {
  return dist::plan_sharding(sharding_spec(recipe, model), model.tables, model.embedding_dim, recipe.gpus);
}

std::string gpu_sharding_unsupported(const Recipe& recipe, const ModelConfig& model, const OptimConfig& optim) {
  if (recipe.gpus == 1) return "";
  for (std::size_t t = 0; t < recipe.sharding.size() && t < model.tables.size(); ++t) {
    const TableConfig& c = model.tables[t];
    const dist::ShardingType type = recipe.sharding[t].type;
    if (type == dist::ShardingType::row_wise && c.pooling == Pooling::mean)
      return "table '" + c.name + "' is mean-pooled and sharded row_wise, which the GPU engine does not run (row "
             "blocks' partial sums cannot be divided by the bag's length)";
    if (type == dist::ShardingType::column_wise && optim.sparse == OptimizerKind::rowwise_adagrad)
      return "table '" + c.name + "' is sharded column_wise under row-wise Adagrad, which the GPU engine does not run "
             "(the accumulator needs every column's gradient)";
  }
  return "";
}

bool gpu_sharding_allowed(dist::ShardingType type, const ModelConfig& model, const OptimConfig& optim, std::size_t t,
                          int gpus) {
  const TableConfig& c = model.tables.at(t);
  switch (type) {
    case dist::ShardingType::table_wise:
    case dist::ShardingType::replicated: return true;
    case dist::ShardingType::row_wise: return c.rows >= gpus && c.pooling != Pooling::mean;
    case dist::ShardingType::column_wise:
      return model.embedding_dim / 2 >= gpus && optim.sparse != OptimizerKind::rowwise_adagrad;
  }
  return false;
}

void validate_recipe(const Recipe& recipe, const ModelConfig& model) {
  if (recipe.batch < 1)
    throw ConfigError("recipe for '" + recipe.hardware + "': batch must be >= 1, got " + std::to_string(recipe.batch));
  if (recipe.row_dtype != DType::f32 && recipe.row_dtype != DType::f16 && recipe.row_dtype != DType::bf16)
    throw ConfigError("recipe for '" + recipe.hardware + "': row dtype must be fp32, fp16 or bf16, got " +
                      std::string(dtype_name(recipe.row_dtype)));
  if (recipe.placement.size() != model.tables.size())
    throw ConfigError("recipe for '" + recipe.hardware + "': " + std::to_string(recipe.placement.size()) +
                      " table placements for a model of " + std::to_string(model.tables.size()) + " tables");
  if (recipe.gpus < 1)
    throw ConfigError("recipe for '" + recipe.hardware + "': gpus must be >= 1, got " + std::to_string(recipe.gpus));
  if (recipe.gpus == 1) {
    if (!recipe.sharding.empty())
      throw ConfigError("recipe for '" + recipe.hardware + "': a sharding for one GPU (the single-device engine has none)");
    return;
  }
  if (recipe.sharding.size() != model.tables.size())
    throw ConfigError("recipe for '" + recipe.hardware + "': " + std::to_string(recipe.sharding.size()) +
                      " table shardings for a model of " + std::to_string(model.tables.size()) + " tables");
  if (recipe.batch < recipe.gpus)
    throw ConfigError("recipe for '" + recipe.hardware + "': batch " + std::to_string(recipe.batch) + " for " +
                      std::to_string(recipe.gpus) + " GPUs; each GPU needs at least one sample");
  for (std::size_t t = 0; t < recipe.sharding.size(); ++t)
    if (recipe.sharding[t].type == dist::ShardingType::table_wise &&
        (recipe.sharding[t].owner < 0 || recipe.sharding[t].owner >= recipe.gpus))
      throw ConfigError("recipe for '" + recipe.hardware + "': table '" + model.tables[t].name + "' owned by rank " +
                        std::to_string(recipe.sharding[t].owner) + ", expected a rank in [0, " +
                        std::to_string(recipe.gpus) + ")");
  sharding_plan(recipe, model);  // row_wise rows and column_wise widths, with the config's messages
}

std::string_view cross_residual_name(bool sixteen_bit) { return sixteen_bit ? "16bit" : "fp32"; }

std::optional<bool> parse_cross_residual(std::string_view name) {
  for (bool sixteen_bit : {false, true})
    if (name == cross_residual_name(sixteen_bit)) return sixteen_bit;
  return std::nullopt;
}

std::string describe_recipe(const Recipe& recipe, const ModelConfig& model) {
  std::string s = "batch " + std::to_string(recipe.batch) + ", " + std::string(dense_precision_name(recipe.dense)) +
                  " GEMMs, " + std::string(dtype_name(recipe.row_dtype)) + " rows, ";
  const int host = recipe.host_tables();
  if (host == 0) {
    s += "all tables in HBM";
  } else {
    s += std::to_string(host) + (host == 1 ? " table" : " tables") + " in host memory (";
    bool first = true;
    for (std::size_t t = 0; t < recipe.placement.size() && t < model.tables.size(); ++t) {
      if (recipe.placement[t] != TablePlacement::host) continue;
      s += (first ? "" : ", ") + model.tables[t].name;
      first = false;
    }
    s += ")";
  }
  if (recipe.gpus == 1) return s;
  s += ", " + std::to_string(recipe.gpus) + " GPUs:";
  bool first_type = true;
  for (dist::ShardingType type : {dist::ShardingType::table_wise, dist::ShardingType::row_wise,
                                  dist::ShardingType::column_wise, dist::ShardingType::replicated}) {
    const int n = recipe.sharded_tables(type);
    if (n == 0) continue;
    s += std::string(first_type ? " " : ", ") + std::to_string(n) + " " + dist::sharding_type_name(type);
    first_type = false;
    if (type == dist::ShardingType::table_wise) continue;
    std::string names;
    for (std::size_t t = 0; t < recipe.sharding.size() && t < model.tables.size(); ++t)
      if (recipe.sharding[t].type == type) names += (names.empty() ? "" : ", ") + model.tables[t].name;
    s += " (" + names + ")";
  }
  if (recipe.exchange_dtype != DType::f32) s += "; " + std::string(dtype_name(recipe.exchange_dtype)) + " exchanges";
  return s;
}

}  // namespace hetrec::plan::plan
