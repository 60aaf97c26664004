#include "plan/search.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <string>

#include "core/error.h"
#include "optim/sparse_update.h"
#include "plan/tuned_kernel_ratios.h"

namespace hetrec::inline plan {

void validate_constraints(const PlanConstraints& c) {
  if (!(c.headroom >= 0.0 && c.headroom < 1.0))
    throw ConfigError("plan constraint headroom: expected a fraction in [0, 1), got " + std::to_string(c.headroom));
  if (c.min_batch < 1) throw ConfigError("plan constraint min_batch: expected >= 1, got " + std::to_string(c.min_batch));
  if (c.max_batch < c.min_batch)
    throw ConfigError("plan constraint max_batch: expected >= min_batch = " + std::to_string(c.min_batch) + ", got " +
                      std::to_string(c.max_batch));
  if (c.dense.empty()) throw ConfigError("plan constraint dense precisions: expected at least one of fp32, tf32, bf16");
  if (c.rows.empty()) throw ConfigError("plan constraint row precisions: expected at least one of fp32, fp16, bf16");
  for (DType t : c.rows)
    if (t != DType::f32 && t != DType::f16 && t != DType::bf16)
      throw ConfigError("plan constraint row precisions: expected fp32, fp16 or bf16, got " + std::string(dtype_name(t)));
  if (!(c.lower_precision_gain >= 0.0))
    throw ConfigError("plan constraint lower_precision_gain: expected >= 0, got " + std::to_string(c.lower_precision_gain));
  if (c.gpus < 1) throw ConfigError("plan constraint gpus: expected >= 1, got " + std::to_string(c.gpus));
  if (c.gpus > 1 && c.allow_host_tables)
    throw ConfigError("plan constraints: tables in host memory are planned for one GPU only (--allow-host-tables with "
                      "--gpus " + std::to_string(c.gpus) + ")");
  if (c.max_batch < c.gpus)
    throw ConfigError("plan constraint max_batch: " + std::to_string(c.max_batch) + " samples for " +
                      std::to_string(c.gpus) + " GPUs; each GPU needs at least one sample");
}

void bind_batch_to_config(PlanConstraints& c, int64_t config_batch) {
  if (config_batch < 1)
    throw ConfigError("train.batch_size: expected >= 1 to bind the planner's batch to, got " + std::to_string(config_batch));
  c.min_batch = c.max_batch = config_batch;
}

void apply_batch_range(PlanConstraints& c, int64_t config_batch, std::optional<int64_t> min_batch,
                       std::optional<int64_t> max_batch, std::string_view min_name, std::string_view max_name) {
  if (min_batch) c.min_batch = *min_batch;
  if (max_batch) c.max_batch = *max_batch;
  if (min_batch && !max_batch && c.min_batch > c.max_batch)
    throw ConfigError(std::string(min_name) + " " + std::to_string(*min_batch) + " is above the config's train.batch_size " +
                      std::to_string(config_batch) + ", the largest batch planned by default; give " +
                      std::string(max_name) + " too");
}

std::string batch_quality_note(int64_t batch, int64_t config_batch) {
  if (batch == config_batch) return {};
  return "batch " + std::to_string(batch) + " is " + (batch > config_batch ? "larger" : "smaller") +
         " than the config's train.batch_size " + std::to_string(config_batch) +
         ", which its learning rates are tuned for: the model trains another trajectory (" +
         (batch > config_batch ? "retune them before relying on its AUC" : "more updates per sample, at fewer samples/s") +
         ")";
}

int precision_steps(const Recipe& recipe) {
  const int rows = recipe.row_dtype == DType::f32 ? 0 : 1;
  const int dense = recipe.dense == DensePrecision::fp32 ? 0 : recipe.dense == DensePrecision::tf32 ? 1 : 2;  // bf16, fp16: 2
  return rows + dense;
}

RecipeEvaluation evaluate_recipe(const Workload& workload, const Recipe& recipe, const PlanTarget& target,
                                 const PlanConstraints& constraints) {
  RecipeEvaluation e;
  e.recipe = recipe;
  e.rank_memory = estimate_rank_memory(workload.model, workload.optim, recipe, target.hw(), workload.ids);
  std::size_t largest = 0;
  for (std::size_t r = 1; r < e.rank_memory.size(); ++r)
    if (e.rank_memory[r].device_bytes() > e.rank_memory[largest].device_bytes()) largest = r;
  e.memory = e.rank_memory[largest];
  e.fits = e.memory.fits(target.hw(), constraints.headroom);
  if (!e.fits) e.refusal = e.memory.refusal(target.hw(), constraints.headroom);
  StepWork work = step_work(workload.model, workload.optim, recipe, target.gemm, workload.ids);
  apply_tuned_ratios(work, target.tuned);
  e.step = predict_step(work, target.step);
  e.score = e.step.samples_per_s / std::pow(1.0 + constraints.lower_precision_gain, precision_steps(recipe));
  if (recipe.dense == DensePrecision::tf32 && target.hw().dense_tflops.tf32 <= 0.0)
    e.note = target.hw().name + " has no TF32 pipe: the GEMMs run as fp32";
  return e;
}

const RecipeEvaluation& PlanResult::best() const {
  if (!ranked.empty()) return ranked.front();
  if (refused.empty()) throw ConfigError("plan for '" + hardware + "': no candidate recipe within the constraints");
  const auto smallest = std::min_element(refused.begin(), refused.end(), [](const auto& a, const auto& b) {
    return a.memory.device_bytes() < b.memory.device_bytes();
  });
  throw ConfigError("plan for '" + hardware + "'" +
                    (smallest->recipe.gpus > 1 ? " on " + std::to_string(smallest->recipe.gpus) + " GPUs" : "") +
                    ": no recipe fits; the smallest candidate (" + std::to_string(smallest->recipe.batch) + " samples, " +
                    std::string(dtype_name(smallest->recipe.row_dtype)) + " rows, " +
                    std::to_string(smallest->recipe.host_tables()) + " tables in host memory) " +
                    smallest->refusal);
}

std::vector<int64_t> candidate_batches(const PlanConstraints& c) {
  std::vector<int64_t> out;
  for (int64_t b = 1; b <= c.max_batch; b *= 2)
    if (b >= c.min_batch) out.push_back(b);
  if (out.empty() || out.back() != c.max_batch) out.push_back(c.max_batch);
  return out;
}

std::vector<int> host_placement_order(const ModelConfig& model) {
  std::vector<int> order(model.tables.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const TableConfig& ta = model.tables[static_cast<std::size_t>(a)];
    const TableConfig& tb = model.tables[static_cast<std::size_t>(b)];
    // hotness / rows, compared without division.
    return static_cast<double>(ta.hotness) * static_cast<double>(tb.rows) <
           static_cast<double>(tb.hotness) * static_cast<double>(ta.rows);
  });
  return order;
}

namespace {

using dist::ShardingType;

// Longest processing time first: each table (costliest first) to the rank with the least
// load so far. `loads` starts with what the ranks already carry.
void balance_table_wise(std::vector<TableSharding>& sharding, const std::vector<double>& cost,
                        std::vector<double> loads) {
  std::vector<std::size_t> order;
  for (std::size_t t = 0; t < sharding.size(); ++t)
    if (sharding[t].type == ShardingType::table_wise) order.push_back(t);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
  for (std::size_t t : order) {
    const auto least = std::min_element(loads.begin(), loads.end()) - loads.begin();
    sharding[t].owner = static_cast<int>(least);
    loads[static_cast<std::size_t>(least)] += cost[t];
  }
}

// The tables not table_wise spread their cost over the ranks: split ones 1/N each,
// replicated ones whole on every rank.
std::vector<double> fixed_loads(const std::vector<TableSharding>& sharding, const std::vector<double>& cost, int gpus) {
  std::vector<double> loads(static_cast<std::size_t>(gpus), 0.0);
  for (std::size_t t = 0; t < sharding.size(); ++t) {
    const ShardingType type = sharding[t].type;
    if (type == ShardingType::table_wise) continue;
    const double share = type == ShardingType::replicated ? cost[t] : cost[t] / gpus;
    for (double& l : loads) l += share;
  }
  return loads;
}

// Tables sorted by `key`, largest first.
std::vector<std::size_t> by_decreasing(const std::vector<double>& key) {
  std::vector<std::size_t> order(key.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key[a] > key[b]; });
  return order;
}

// The split a table gets when it is too costly or too large for one rank: row_wise, or
// column_wise where row_wise is not legal; table_wise when neither is.
ShardingType split_type(const Workload& w, std::size_t t, int gpus) {
  if (gpu_sharding_allowed(ShardingType::row_wise, w.model, w.optim, t, gpus)) return ShardingType::row_wise;
  if (gpu_sharding_allowed(ShardingType::column_wise, w.model, w.optim, t, gpus)) return ShardingType::column_wise;
  return ShardingType::table_wise;
}

// Bisection steps of the balanced row_wise cut: the block time is found to 2^-24 of the
// whole table's, far below the model's own error.
constexpr int kBalancedCutIterations = 24;

// Row bounds that give each of the n blocks of table t the same predicted embedding time
// (row_block_embedding_us): the largest per-block time tau for which cutting blocks of
// time tau one after another still leaves the last block no longer, found by bisection.
// A table whose hot ids sit in its first rows gets a short first block. Empty when the
// table has fewer rows than ranks.
std::vector<int64_t> balanced_row_bounds(const Workload& w, const Recipe& base, const PlanTarget& target,
                                         std::size_t t, int n) {
  const int64_t rows = w.model.tables[t].rows;
  if (rows < n) return {};
  const auto block_us = [&](int64_t first, int64_t last) {
    return row_block_embedding_us(w.model, w.optim, base, target.hw(), w.ids, target.step, t, first, last);
  };
  // Greedy cut at block time tau: each block ends at the first row where its time reaches
  // tau (leaving a row for every later block). Returns the bounds and the last block's time.
  const auto cut = [&](double tau, std::vector<int64_t>& bounds) {
    bounds.assign(1, 0);
    for (int r = 0; r + 1 < n; ++r) {
      const int64_t first = bounds.back();
      int64_t lo = first + 1, hi = rows - (n - r - 1);  // the end row lies in [lo, hi]
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (block_us(first, mid) >= tau) hi = mid;
        else lo = mid + 1;
      }
      bounds.push_back(lo);
    }
    bounds.push_back(rows);
    return block_us(bounds[bounds.size() - 2], rows);
  };
  double lo = 0.0, hi = block_us(0, rows);
  std::vector<int64_t> bounds, best;
  for (int i = 0; i < kBalancedCutIterations; ++i) {
    const double tau = 0.5 * (lo + hi);
    if (cut(tau, bounds) > tau) lo = tau;  // the last block is left too long: cut longer blocks
    else hi = tau, best = bounds;
  }
  if (best.empty()) cut(hi, best);
  return best;
}

// Small tables: at most this many bytes of rows and optimizer state are replicated on
// every rank in the replicating variants (a lookup of the local samples instead of an
// exchange; the update over the global batch on every rank). Planner's choice: a table
// of 1 MiB or 64 MiB costs little memory next to the activations.
constexpr double kReplicateBytes[] = {1.0 * 1024 * 1024, 64.0 * 1024 * 1024};
// The most tables the split variants split (the costliest or largest first).
constexpr std::size_t kMaxSplitTables = 8;

}  // namespace

std::vector<std::vector<TableSharding>> candidate_shardings(const Workload& w, const Recipe& base,
                                                            const PlanTarget& target) {
  const int n = base.gpus;
  if (n < 2) throw ConfigError("candidate_shardings: expected a recipe for several GPUs, got " + std::to_string(n));
  const std::size_t tables = w.model.tables.size();
  const double row_bytes = static_cast<double>(w.model.embedding_dim) * static_cast<double>(dtype_size(base.row_dtype));
  const double state_bytes =
      static_cast<double>(sparse_state_per_row(w.optim.sparse, w.model.embedding_dim)) * 4.0;  // fp32 state
  std::vector<double> cost(tables), bytes(tables);
  for (std::size_t t = 0; t < tables; ++t) {
    cost[t] = table_embedding_us(w.model, w.optim, base, target.hw(), w.ids, target.step, t);
    bytes[t] = static_cast<double>(w.model.tables[t].rows) * (row_bytes + state_bytes);
  }
  std::vector<std::vector<TableSharding>> out;
  const auto add = [&](std::vector<TableSharding> s) {
    for (std::size_t t = 0; t < tables; ++t)
      if (!gpu_sharding_allowed(s[t].type, w.model, w.optim, t, n))
        throw InternalError("candidate_shardings: an illegal sharding for table " + w.model.tables[t].name);
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
  };
  // dist::plan_sharding's default: table_wise, table t on rank t mod N.
  std::vector<TableSharding> round_robin(tables);
  for (std::size_t t = 0; t < tables; ++t) round_robin[t] = {ShardingType::table_wise, static_cast<int>(t % n)};
  add(round_robin);

  // Base placements: table_wise balanced by time or by bytes, and with the k costliest
  // (or largest) tables split.
  std::vector<std::vector<TableSharding>> bases;
  for (const std::vector<double>* key : {&cost, &bytes}) {
    std::vector<TableSharding> s(tables);
    balance_table_wise(s, *key, std::vector<double>(static_cast<std::size_t>(n), 0.0));
    bases.push_back(s);
    const std::vector<std::size_t> order = by_decreasing(*key);
    for (std::size_t k = 1; k <= std::min(kMaxSplitTables, tables); ++k) {
      std::vector<TableSharding> split(tables);
      for (std::size_t i = 0; i < k; ++i) split[order[i]].type = split_type(w, order[i], n);
      balance_table_wise(split, *key, fixed_loads(split, *key, n));
      bases.push_back(split);
    }
  }
  for (const ShardingType uniform : {ShardingType::row_wise, ShardingType::column_wise}) {
    std::vector<TableSharding> s(tables);
    bool any = false;
    for (std::size_t t = 0; t < tables; ++t)
      if (gpu_sharding_allowed(uniform, w.model, w.optim, t, n)) {
        s[t].type = uniform;
        any = true;
      }
    if (!any) continue;
    balance_table_wise(s, cost, fixed_loads(s, cost, n));
    bases.push_back(s);
  }
  // The bases with row_wise tables again, each table cut into blocks of equal predicted
  // time instead of equal rows.
  std::map<std::size_t, std::vector<int64_t>> cuts;  // per table, computed once
  const std::size_t even_bases = bases.size();
  for (std::size_t i = 0; i < even_bases; ++i) {
    std::vector<TableSharding> s = bases[i];
    bool any = false;
    for (std::size_t t = 0; t < tables; ++t)
      if (s[t].type == ShardingType::row_wise) {
        auto cut = cuts.find(t);
        if (cut == cuts.end()) cut = cuts.emplace(t, balanced_row_bounds(w, base, target, t, n)).first;
        s[t].row_bounds = cut->second;
        any = any || !s[t].row_bounds.empty();
      }
    if (any) bases.push_back(std::move(s));
  }
  for (const std::vector<TableSharding>& b : bases) {
    add(b);
    for (double limit : kReplicateBytes) {
      std::vector<TableSharding> s = b;
      bool any = false;
      for (std::size_t t = 0; t < tables; ++t)
        if (bytes[t] <= limit && s[t].type == ShardingType::table_wise) {
          s[t] = {ShardingType::replicated, 0};
          any = true;
        }
      if (!any) continue;
      balance_table_wise(s, cost, fixed_loads(s, cost, n));
      add(s);
    }
  }
  return out;
}

namespace {

// The embedding exchanges' element type a recipe of this dense precision uses: bf16
// when the GEMMs run on 16-bit operands (the pooled vectors are rounded to 16 bits where
// they enter them, so the exchange halves the bytes on the links at the precision the
// recipe already trains in), fp32 otherwise.
DType exchange_dtype_for(DensePrecision dense) { return sixteen_bit_dense(dense) ? DType::bf16 : DType::f32; }

// Shardings evaluated in full per (batch, precisions), besides the default placement: the
// first that fit in the ranking by the terms a sharding changes. Planner's choice: the
// ranking's error (the streams' overlap it leaves out) is a fraction of a percent, so the
// true best is among the first few.
constexpr std::size_t kFullyEvaluatedShardings = 4;

// Several GPUs: for each (batch, row dtype) the shardings ranked by the terms they change,
// then for each dense precision the fastest in full of the first that fit and the default.
void plan_sharded(const Workload& workload, const PlanTarget& target, const PlanConstraints& constraints,
                  PlanResult& result) {
  const Hardware& hw = target.hw();
  for (int64_t batch : candidate_batches(constraints)) {
    if (batch < constraints.gpus) continue;
    for (DType rows : constraints.rows) {
      Recipe base = recipe_of_model(workload.model, batch, hw.name);
      base.row_dtype = rows;
      base.placement.assign(workload.model.tables.size(), TablePlacement::hbm);
      base.gpus = constraints.gpus;
      std::vector<std::pair<double, std::vector<TableSharding>>> ranked;
      std::vector<std::vector<TableSharding>> candidates = candidate_shardings(workload, base, target);
      const std::vector<TableSharding> round_robin = candidates.front();
      for (std::vector<TableSharding>& s : candidates) {
        Recipe r = base;
        r.sharding = s;
        StepWork work = sharded_step_work(workload.model, workload.optim, r, hw, workload.ids);
        apply_tuned_ratios(work, target.tuned);
        const double ms = predict_step(work, target.step).step_ms;
        ranked.emplace_back(ms, std::move(s));
      }
      std::stable_sort(ranked.begin(), ranked.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (DensePrecision dense : constraints.dense) {
        if (dense == DensePrecision::tf32 && hw.dense_tflops.tf32 <= 0.0) continue;
        Recipe r = base;
        r.dense = dense;
        r.cross_residual_16bit = sixteen_bit_dense(dense);  // as fast or faster, within the fp32 stream's parity
        r.exchange_dtype = exchange_dtype_for(dense);
        std::optional<RecipeEvaluation> refused;
        std::optional<RecipeEvaluation> chosen;
        std::size_t evaluated = 0;
        for (const auto& [ms, sharding] : ranked) {
          // The first few that fit, and the default placement, are evaluated in full (the
          // ranking leaves out the overlap of the streams, which can reorder close ones).
          if (evaluated >= kFullyEvaluatedShardings && sharding != round_robin) continue;
          r.sharding = sharding;
          MemoryEstimate memory = estimate_memory(workload.model, workload.optim, r, hw, workload.ids);
          if (!memory.fits(hw, constraints.headroom)) {
            if (!refused || memory.device_bytes() < refused->memory.device_bytes()) {
              refused = RecipeEvaluation{};
              refused->recipe = r;
              refused->refusal = memory.refusal(hw, constraints.headroom);
              refused->memory = std::move(memory);
            }
            continue;
          }
          RecipeEvaluation e = evaluate_recipe(workload, r, target, constraints);
          if (sharding != round_robin) ++evaluated;
          if (!chosen || e.step.step_ms < chosen->step.step_ms) chosen = std::move(e);
        }
        if (chosen) result.ranked.push_back(std::move(*chosen));
        // Nothing fits: the sharding that needs the least memory on its fullest rank.
        else if (refused) result.refused.push_back(std::move(*refused));
      }
    }
  }
}

}  // namespace

PlanResult plan_recipes(const Workload& workload, const PlanTarget& target, const PlanConstraints& constraints) {
  validate_constraints(constraints);
  const Hardware& hw = target.hw();
  PlanResult result;
  result.hardware = hw.name;
  if (constraints.gpus > 1) {
    plan_sharded(workload, target, constraints, result);
    std::stable_sort(result.ranked.begin(), result.ranked.end(),
                     [](const RecipeEvaluation& a, const RecipeEvaluation& b) { return a.score > b.score; });
    return result;
  }
  const std::vector<int> order = host_placement_order(workload.model);
  for (int64_t batch : candidate_batches(constraints)) {
    for (DensePrecision dense : constraints.dense) {
      // Without a TF32 pipe a tf32 recipe is the fp32 one under another name.
      if (dense == DensePrecision::tf32 && hw.dense_tflops.tf32 <= 0.0) continue;
      for (DType rows : constraints.rows) {
        Recipe r = recipe_of_model(workload.model, batch, hw.name);
        r.dense = dense;
        r.cross_residual_16bit = sixteen_bit_dense(dense);  // as fast or faster, within the fp32 stream's parity
        r.row_dtype = rows;
        MemoryEstimate memory = estimate_memory(workload.model, workload.optim, r, hw);
        bool fits = memory.fits(hw, constraints.headroom);
        for (std::size_t k = 0; !fits && constraints.allow_host_tables && k < order.size(); ++k) {
          r.placement[static_cast<std::size_t>(order[k])] = TablePlacement::host;
          memory = estimate_memory(workload.model, workload.optim, r, hw);
          fits = memory.fits(hw, constraints.headroom);
        }
        if (!fits) {
          RecipeEvaluation e;
          e.recipe = r;
          e.refusal = memory.refusal(hw, constraints.headroom);
          e.memory = std::move(memory);
          result.refused.push_back(std::move(e));
          continue;
        }
        result.ranked.push_back(evaluate_recipe(workload, r, target, constraints));
      }
    }
  }
  std::stable_sort(result.ranked.begin(), result.ranked.end(),
                   [](const RecipeEvaluation& a, const RecipeEvaluation& b) { return a.score > b.score; });
  return result;
}

}  // namespace hetrec::plan::plan
