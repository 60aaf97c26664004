#include "plan/sharded_layout.h"

#include <string>

#include "core/error.h"

namespace hetrec::inline plan {
namespace {

constexpr double kFloatBytes = 4.0;

// Samples of rank r: data/batch_slice.h, share_begin (restated: the plan layer sits below
// data's batch code only through this formula).
int64_t share_begin(int64_t size, int rank, int ranks) { return size * rank / ranks; }
int64_t share_of(int64_t size, int rank, int ranks) {
  return share_begin(size, rank + 1, ranks) - share_begin(size, rank, ranks);
}

// A whole table looked up and updated for `samples` bags.
ShardLoad whole_table(const TableConfig& c, int t, bool host, const IdDistribution& ids, double samples) {
  ShardLoad s;
  s.table = t;
  s.rows = c.rows;
  s.host = host;
  s.lookup_ids = s.update_ids = samples * c.hotness;
  s.lookup_unique = s.update_unique = expected_unique_rows(ids, c.rows, s.lookup_ids);
  return s;
}

}  // namespace

ShardLoad whole_table_load(const ModelConfig& model, std::size_t t, bool host, const IdDistribution& ids, double samples) {
  return whole_table(model.tables.at(t), static_cast<int>(t), host, ids, samples);
}

ShardLoad row_block_load(const ModelConfig& model, std::size_t t, bool host, const IdDistribution& ids, double samples,
                         int64_t first, int64_t last) {
  const TableConfig& c = model.tables.at(t);
  const double draws = samples * c.hotness;
  ShardLoad s;
  s.table = static_cast<int>(t);
  s.rows = last - first;
  s.host = host;
  s.lookup_ids = s.update_ids = draws * row_block_id_share(ids, c.rows, first, last);
  s.lookup_unique = s.update_unique = row_block_unique_rows(ids, c.rows, first, last, draws);
  return s;
}

double ShardGroup::lookup_ids() const {
  double n = 0.0;
  for (const ShardLoad& s : shards) n += s.lookup_ids;
  return n;
}

double ShardGroup::update_ids() const {
  double n = 0.0;
  for (const ShardLoad& s : shards) n += s.update_ids;
  return n;
}

int64_t ShardGroup::rows() const {
  int64_t n = 0;
  for (const ShardLoad& s : shards) n += s.rows;
  return n;
}

double row_block_id_share(const IdDistribution& ids, int64_t rows, int64_t first, int64_t last) {
  if (ids.law == IdLaw::power) return id_mass(ids, rows, first, last);
  return static_cast<double>(last - first) / static_cast<double>(rows);
}

double row_block_unique_rows(const IdDistribution& ids, int64_t rows, int64_t first, int64_t last, double draws) {
  if (ids.law == IdLaw::power) return expected_unique_rows_in(ids, rows, first, last, draws);
  return expected_unique_rows(ids, rows, draws) * static_cast<double>(last - first) / static_cast<double>(rows);
}

std::vector<RankShards> rank_shards(const ModelConfig& model, const Recipe& recipe, const IdDistribution& ids) {
  validate_recipe(recipe, model);
  const double b = static_cast<double>(recipe.batch);
  const int n = recipe.gpus;
  std::vector<RankShards> out(static_cast<std::size_t>(n));
  if (n == 1) {
    ShardGroup g;
    g.width = model.embedding_dim;
    g.lookup_samples = g.update_samples = b;
    for (std::size_t t = 0; t < model.tables.size(); ++t)
      g.shards.push_back(whole_table(model.tables[t], static_cast<int>(t), recipe.placement[t] == TablePlacement::host,
                                     ids, b));
    out[0].local_samples = recipe.batch;
    out[0].groups.push_back(std::move(g));
    return out;
  }
  const dist::ShardingPlan plan = sharding_plan(recipe, model);
  for (int r = 0; r < n; ++r) {
    RankShards& rs = out[static_cast<std::size_t>(r)];
    rs.rank = r;
    rs.local_samples = share_of(recipe.batch, r, n);
    const double local = static_cast<double>(rs.local_samples);
    ShardGroup whole, column, replicated;
    whole.kind = ShardGroupKind::whole;
    column.kind = ShardGroupKind::column;
    replicated.kind = ShardGroupKind::replicated;
    whole.width = replicated.width = model.embedding_dim;
    whole.lookup_samples = whole.update_samples = b;
    column.lookup_samples = column.update_samples = b;
    replicated.lookup_samples = local;
    replicated.update_samples = b;
    for (std::size_t t = 0; t < model.tables.size(); ++t) {
      const TableConfig& c = model.tables[t];
      const dist::TableShard& ts = plan.tables[t];
      const bool host = recipe.placement[t] == TablePlacement::host;
      const int ti = static_cast<int>(t);
      const auto ru = static_cast<std::size_t>(r);
      switch (ts.type) {
        case dist::ShardingType::table_wise:
          if (ts.owner == r) whole.shards.push_back(whole_table(c, ti, host, ids, b));
          break;
        case dist::ShardingType::row_wise: {
          if (!ts.holds(r)) break;
          whole.shards.push_back(row_block_load(model, t, host, ids, b, ts.row_begin[ru], ts.row_end[ru]));
          break;
        }
        case dist::ShardingType::column_wise:
          if (!ts.holds(r)) break;
          column.width = ts.cols_of(r);
          column.shards.push_back(whole_table(c, ti, host, ids, b));
          break;
        case dist::ShardingType::replicated: {
          ShardLoad s = whole_table(c, ti, host, ids, b);
          s.lookup_ids = local * c.hotness;
          s.lookup_unique = expected_unique_rows(ids, c.rows, s.lookup_ids);
          replicated.shards.push_back(s);
          break;
        }
      }
    }
    for (ShardGroup* g : {&whole, &column, &replicated})
      if (!g->shards.empty()) rs.groups.push_back(std::move(*g));
  }
  return out;
}

ExchangeBytes exchange_bytes(const ModelConfig& model, const Recipe& recipe) {
  validate_recipe(recipe, model);
  const int n = recipe.gpus;
  const auto nz = static_cast<std::size_t>(n);
  ExchangeBytes e;
  e.whole.assign(nz, std::vector<double>(nz, 0.0));
  e.column.assign(nz, std::vector<double>(nz, 0.0));
  e.replicated.assign(nz, std::vector<double>(nz, 0.0));
  if (n == 1) {
    e.whole_columns.assign(1, static_cast<int64_t>(model.tables.size()) * model.embedding_dim);
    e.column_columns.assign(1, 0);
    return e;
  }
  const dist::ShardingPlan plan = sharding_plan(recipe, model);
  const int64_t dim = model.embedding_dim;
  e.whole_columns.assign(nz, 0);
  e.column_columns.assign(nz, 0);
  for (const dist::TableShard& ts : plan.tables) {
    switch (ts.type) {
      case dist::ShardingType::table_wise:
        e.whole_columns[static_cast<std::size_t>(ts.owner)] += dim;
        e.pieces += 1;
        e.piece_columns += dim;
        break;
      case dist::ShardingType::row_wise:
        for (std::size_t r = 0; r < nz; ++r)
          if (ts.holds(static_cast<int>(r))) {
            e.whole_columns[r] += dim;
            e.pieces += 1;
            e.piece_columns += dim;
          }
        break;
      case dist::ShardingType::column_wise:
        for (std::size_t r = 0; r < nz; ++r)
          if (ts.holds(static_cast<int>(r))) {
            e.column_columns[r] += ts.cols_of(static_cast<int>(r));
            e.pieces += 1;
          }
        e.piece_columns += dim;
        break;
      case dist::ShardingType::replicated:
        e.replicated_columns += dim;
        e.pieces += 1;
        e.piece_columns += dim;
        break;
    }
  }
  // The all-to-alls carry the recipe's exchange type; the replicated gather stays fp32.
  const auto routed_bytes = static_cast<double>(dtype_size(recipe.exchange_dtype));
  for (int r = 0; r < n; ++r)
    for (int s = 0; s < n; ++s) {
      const auto ru = static_cast<std::size_t>(r), su = static_cast<std::size_t>(s);
      const double to_s = static_cast<double>(share_of(recipe.batch, s, n));
      e.whole[ru][su] = to_s * static_cast<double>(e.whole_columns[ru]) * routed_bytes;
      e.column[ru][su] = to_s * static_cast<double>(e.column_columns[ru]) * routed_bytes;
      e.replicated[ru][su] =
          static_cast<double>(share_of(recipe.batch, r, n)) * static_cast<double>(e.replicated_columns) * kFloatBytes;
    }
  return e;
}

}  // namespace hetrec::plan::plan
