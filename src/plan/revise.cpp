#include "plan/revise.h"

#include <fmt/format.h>

#include <optional>
#include <string>

#include "core/error.h"

namespace hetrec::inline plan {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The best recipe of `model`, or none when nothing fits.
std::optional<RecipeEvaluation> best_of(const Workload& base, const ModelConfig& model, const PlanTarget& target,
                                        const PlanConstraints& c) {
  Workload w = base;
  w.model = model;
  const PlanResult p = plan_recipes(w, target, c);
  if (p.ranked.empty()) return std::nullopt;
  return p.ranked.front();
}

int64_t total_rows(const ModelConfig& m) {
  int64_t n = 0;
  for (const TableConfig& t : m.tables) n += t.rows;
  return n;
}

double cost_of(const RecipeEvaluation& before, const RecipeEvaluation& after) {
  return 1.0 - after.step.samples_per_s / before.step.samples_per_s;
}

double phase_share(const StepPrediction& s, StepPhase a, StepPhase b) { return (s.phase(a) + s.phase(b)) / s.step_ms; }

}  // namespace

std::vector<ModelRevision> propose_revisions(const Workload& workload, const PlanTarget& target,
                                             const PlanConstraints& constraints, const RevisionOptions& options) {
  if (options.raw_ids_per_row < 1)
    throw ConfigError("revise: raw ids per row: expected >= 1, got " + std::to_string(options.raw_ids_per_row));
  std::optional<RecipeEvaluation> current = best_of(workload, workload.model, target, constraints);
  if (!current) (void)plan_recipes(workload, target, constraints).best();  // throws, naming the consumers
  std::vector<ModelRevision> out;
  ModelConfig model = workload.model;
  int64_t raw = options.raw_ids_per_row;

  // More rows for the hashed tables: the largest power-of-two factor that divides the raw
  // space, fits, and costs at most max_cost.
  {
    int64_t chosen = 1;
    std::optional<RecipeEvaluation> chosen_plan;
    ModelConfig chosen_model = model;
    for (int64_t f = 2; f <= raw && raw % f == 0; f *= 2) {
      ModelConfig m = model;
      for (TableConfig& t : m.tables) t.rows *= f;
      const std::optional<RecipeEvaluation> p = best_of(workload, m, target, constraints);
      if (!p || cost_of(*current, *p) > options.max_cost) break;
      chosen = f, chosen_plan = p, chosen_model = m;
    }
    if (chosen > 1) {
      ModelRevision r;
      r.change = fmt::format("every table: rows x{} ({} -> {} rows; raw ids per row {} -> {})", chosen,
                             total_rows(model), total_rows(chosen_model), raw, raw / chosen);
      r.reason = fmt::format(
          "device memory is left over ({:.1f} of {:.1f} GiB used by the best recipe) and the ids are hashed with "
          "{} raw ids per row: {}x the rows cut the collisions {}-fold",
          current->memory.device_bytes() / kGiB, current->memory.usable_bytes / kGiB, raw, chosen, chosen);
      r.model = chosen_model;
      r.raw_ids_per_row = raw / chosen;
      r.before = *current;
      r.after = *chosen_plan;
      r.cost = cost_of(r.before, r.after);
      model = chosen_model;
      raw /= chosen;
      current = chosen_plan;
      out.push_back(std::move(r));
    }
  }
  // A larger DCN rank: doubled while it costs at most max_cost and stays below the width.
  if (model.arch == Arch::dcnv2 && model.cross_rank > 0 && model.cross_layers > 0) {
    const int width = model.interaction_width();
    int rank = model.cross_rank;
    std::optional<RecipeEvaluation> chosen_plan;
    for (int r = 2 * model.cross_rank; r < width; r *= 2) {
      ModelConfig m = model;
      m.cross_rank = r;
      const std::optional<RecipeEvaluation> p = best_of(workload, m, target, constraints);
      if (!p || cost_of(*current, *p) > options.max_cost) break;
      rank = r, chosen_plan = p;
    }
    if (rank != model.cross_rank) {
      ModelRevision r;
      ModelConfig m = model;
      m.cross_rank = rank;
      r.change = fmt::format("cross net rank {} -> {} ({} layers, width {})", model.cross_rank, rank,
                             model.cross_layers, width);
      r.reason = fmt::format(
          "arithmetic is cheap here relative to bandwidth: the cross net is {:.0f}% of the step and {} "
          "({:.0f} bf16 TFLOP/s against {:.1f} TB/s) runs the larger rank for {:.1f}% of the samples/s",
          100.0 * phase_share(current->step, StepPhase::interaction_fwd, StepPhase::interaction_bwd),
          target.hw().name, target.hw().dense_tflops.bf16, target.hw().hbm_tbs,
          100.0 * cost_of(*current, *chosen_plan));
      r.model = m;
      r.raw_ids_per_row = raw;
      r.before = *current;
      r.after = *chosen_plan;
      r.cost = cost_of(r.before, r.after);
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace hetrec::plan::plan
