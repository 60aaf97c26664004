#include "plan/search.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"

namespace hetrec {

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
  e.memory = estimate_memory(workload.model, workload.optim, recipe, target.hw());
  e.fits = e.memory.fits(target.hw(), constraints.headroom);
  if (!e.fits) e.refusal = e.memory.refusal(target.hw(), constraints.headroom);
  e.step = predict_step(step_work(workload.model, workload.optim, recipe, target.gemm, workload.ids), target.step);
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
  throw ConfigError("plan for '" + hardware + "': no recipe fits; the smallest candidate (" +
                    std::to_string(smallest->recipe.batch) + " samples, " +
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

PlanResult plan_recipes(const Workload& workload, const PlanTarget& target, const PlanConstraints& constraints) {
  validate_constraints(constraints);
  const Hardware& hw = target.hw();
  PlanResult result;
  result.hardware = hw.name;
  const std::vector<int> order = host_placement_order(workload.model);
  for (int64_t batch : candidate_batches(constraints)) {
    for (DensePrecision dense : constraints.dense) {
      // Without a TF32 pipe a tf32 recipe is the fp32 one under another name.
      if (dense == DensePrecision::tf32 && hw.dense_tflops.tf32 <= 0.0) continue;
      for (DType rows : constraints.rows) {
        Recipe r = recipe_of_model(workload.model, batch, hw.name);
        r.dense = dense;
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

}  // namespace hetrec
