#include "plan/report.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/error.h"
#include "plan/device_memory.h"

namespace hetrec::inline plan {
namespace {

// Width of the row-label column and the narrowest value column.
constexpr std::size_t kLabelWidth = 34;
constexpr std::size_t kMinColumnWidth = 20;

std::string rows_text(const Recipe& r) { return std::string(dtype_name(r.row_dtype)); }

std::string host_text(const Recipe& r) { return std::to_string(r.host_tables()); }

}  // namespace

std::string format_rate(double per_second) {
  if (per_second >= 1e6) return fmt::format("{:.2f} M", per_second / 1e6);
  if (per_second >= 1e3) return fmt::format("{:.0f} k", per_second / 1e3);
  return fmt::format("{:.0f}", per_second);
}

std::string format_plan_table(const Workload& workload, const std::vector<PlanResult>& plans,
                              const std::vector<const PlanTarget*>& targets) {
  int64_t rows = 0;
  for (const TableConfig& t : workload.model.tables) rows += t.rows;
  std::string s = fmt::format("model: {}, {} tables ({:.1f} M rows, dim {}), ids {}\n",
                              workload.model.arch == Arch::dcnv2 ? "DLRM-DCNv2" : "DLRM", workload.model.num_tables(),
                              static_cast<double>(rows) / 1e6, workload.model.embedding_dim,
                              describe_id_distribution(workload.ids));
  std::size_t width = kMinColumnWidth;
  for (const PlanResult& p : plans) width = std::max(width, p.hardware.size() + 2);
  std::vector<const RecipeEvaluation*> best(plans.size(), nullptr);
  std::vector<std::string> refusals(plans.size());
  for (std::size_t i = 0; i < plans.size(); ++i) {
    try {
      best[i] = &plans[i].best();
    } catch (const ConfigError& e) {
      refusals[i] = e.what();
    }
  }
  const auto row = [&](const std::string& label, auto&& cell) {
    s += fmt::format("{:<{}}", label, kLabelWidth);
    for (std::size_t i = 0; i < plans.size(); ++i) s += fmt::format("{:<{}}", cell(i), width);
    s += "\n";
  };
  const auto value = [&](auto&& f) {
    return [&, f](std::size_t i) -> std::string { return best[i] ? f(*best[i], i) : std::string("-"); };
  };
  row("", [&](std::size_t i) { return plans[i].hardware; });
  row("recipe", [&](std::size_t i) { return best[i] ? std::string("planned") : std::string("does not fit"); });
  row("batch", value([](const RecipeEvaluation& e, std::size_t) { return std::to_string(e.recipe.batch); }));
  row("GEMMs", value([](const RecipeEvaluation& e, std::size_t) { return std::string(dense_precision_name(e.recipe.dense)); }));
  row("embedding rows", value([](const RecipeEvaluation& e, std::size_t) { return rows_text(e.recipe); }));
  row("tables in host memory", value([](const RecipeEvaluation& e, std::size_t) { return host_text(e.recipe); }));
  int most_gpus = 1;
  for (const RecipeEvaluation* e : best)
    if (e) most_gpus = std::max(most_gpus, e->recipe.gpus);
  if (most_gpus > 1) {
    row("GPUs", value([](const RecipeEvaluation& e, std::size_t) { return std::to_string(e.recipe.gpus); }));
    for (const dist::ShardingType type : {dist::ShardingType::table_wise, dist::ShardingType::row_wise,
                                          dist::ShardingType::column_wise, dist::ShardingType::replicated})
      row(std::string("  ") + dist::sharding_type_name(type) + " tables", value([type](const RecipeEvaluation& e, std::size_t) {
            return std::to_string(e.recipe.sharded_tables(type));
          }));
  }
  row(most_gpus > 1 ? "device memory (GiB, fullest rank)" : "device memory (GiB)",
      value([&](const RecipeEvaluation& e, std::size_t) {
        return fmt::format("{:.1f} of {:.1f}", e.memory.device_bytes() / kGiB, e.memory.usable_bytes / kGiB);
      }));
  for (int r = 0; most_gpus > 1 && r < most_gpus; ++r)
    row("  rank " + std::to_string(r) + " (GiB, ms)", value([r](const RecipeEvaluation& e, std::size_t) {
          const auto k = static_cast<std::size_t>(r);
          if (k >= e.rank_memory.size() || k >= e.step.rank_step_ms.size()) return std::string("-");
          return fmt::format("{:.1f}, {:.2f}", e.rank_memory[k].device_bytes() / kGiB, e.step.rank_step_ms[k]);
        }));
  row("step (ms)", value([](const RecipeEvaluation& e, std::size_t) { return fmt::format("{:.2f}", e.step.step_ms); }));
  row("samples/s", value([](const RecipeEvaluation& e, std::size_t) { return format_rate(e.step.samples_per_s); }));
  row("step model", [&](std::size_t i) {
    return i < targets.size() && targets[i]->step.calibrated ? std::string("calibrated") : std::string("generic");
  });
  s += "phase (ms)\n";
  for (StepPhase ph : kAllStepPhases)
    if (most_gpus > 1 || !communication_phase(ph))
      row("  " + std::string(step_phase_name(ph)),
        value([ph](const RecipeEvaluation& e, std::size_t) { return fmt::format("{:.3f}", e.step.phase(ph)); }));
  for (std::size_t i = 0; i < plans.size(); ++i)
    if (!best[i]) s += refusals[i] + "\n";
  return s;
}

std::string format_phase_table(const RecipeEvaluation& e) {
  std::string s = fmt::format("{:<{}}{:>10}{:>9}\n", "phase", kLabelWidth, "ms", "share");
  for (StepPhase ph : kAllStepPhases) {
    if (e.recipe.gpus == 1 && communication_phase(ph)) continue;
    const double ms = e.step.phase(ph);
    s += fmt::format("{:<{}}{:>10.3f}{:>8.1f}%\n", step_phase_name(ph), kLabelWidth, ms,
                     e.step.step_ms > 0.0 ? 100.0 * ms / e.step.step_ms : 0.0);
  }
  s += fmt::format("{:<{}}{:>10.3f}\n", "step", kLabelWidth, e.step.step_ms);
  s += fmt::format("{:<{}}{:>10}\n", "samples/s", kLabelWidth, format_rate(e.step.samples_per_s));
  return s;
}

std::string format_candidates(const Workload& workload, const PlanResult& plan, std::size_t count) {
  std::string s = fmt::format("{:>4}  {:<58}{:>12}{:>10}{:>12}{:>12}\n", "rank", "recipe", "memory GiB", "step ms",
                              "samples/s", "score");
  for (std::size_t i = 0; i < plan.ranked.size() && i < count; ++i) {
    const RecipeEvaluation& e = plan.ranked[i];
    s += fmt::format("{:>4}  {:<58}{:>12.1f}{:>10.2f}{:>12}{:>12}\n", i + 1, describe_recipe(e.recipe, workload.model),
                     e.memory.device_bytes() / kGiB, e.step.step_ms, format_rate(e.step.samples_per_s),
                     format_rate(e.score));
  }
  return s;
}

std::string format_port_comparisons(const Workload& workload, const std::vector<PortComparison>& comparisons) {
  std::string s;
  for (const PortComparison& c : comparisons) {
    s += fmt::format("{} recipe on {}: {}\n", c.from, c.to, describe_recipe(c.ported.recipe, workload.model));
    if (!c.ported.note.empty()) s += "  note: " + c.ported.note + "\n";
    if (!c.ported.fits) {
      s += "  does not fit: " + c.ported.refusal + "\n";
    } else {
      s += fmt::format("  fits ({:.1f} of {:.1f} GiB); predicted {:.2f} ms, {} samples/s\n",
                       c.ported.memory.device_bytes() / kGiB, c.ported.memory.usable_bytes / kGiB,
                       c.ported.step.step_ms, format_rate(c.ported.step.samples_per_s));
    }
    if (!c.native) {
      s += fmt::format("  {} has no recipe of its own within the constraints\n", c.to);
      continue;
    }
    s += fmt::format("  {} recipe on {}: {}; predicted {:.2f} ms, {} samples/s\n", c.to, c.to,
                     describe_recipe(c.native->recipe, workload.model), c.native->step.step_ms,
                     format_rate(c.native->step.samples_per_s));
    if (c.ported.fits && precision_steps(c.ported.recipe) > precision_steps(c.native->recipe))
      s += "  note: the ported recipe uses lower precision than the planned one; the planner lowers precision only "
           "for more than its gain threshold\n";
    if (c.ported.fits)
      s += fmt::format("  direct port / planned samples/s = {:.3f}\n", c.ratio);
    else
      s += "  direct port / planned: the ported recipe cannot run\n";
  }
  return s;
}

}  // namespace hetrec::plan::plan
