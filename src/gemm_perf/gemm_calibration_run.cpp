#include "gemm_perf/gemm_calibration_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>
#include <numeric>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "gemm_perf/gemm_selector.h"

namespace hetrec::inline gemm_perf {
namespace {

// Passes over the held-out shapes that the selection cost is averaged over.
constexpr int kSelectionTimingPasses = 5;
// The calibration sample of fold 0: the centre of each block (calibration_shape_indices).
constexpr double kCentredSample = 0.5;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

nlohmann::json summary_json(const SelectionSummary& s) {
  return {{"shapes", s.shapes},
          {"unpredicted", s.unpredicted},
          {"geomean_oracle_over_selected", s.geomean_ratio},
          {"p5_oracle_over_selected", s.p5_ratio},
          {"min_oracle_over_selected", s.min_ratio},
          {"heuristic_shapes", s.heuristic_shapes},
          {"heuristic_geomean_oracle_over_selected", s.heuristic_geomean_ratio},
          {"heuristic_p5_oracle_over_selected", s.heuristic_p5_ratio},
          {"mean_spearman", s.mean_spearman},
          {"median_spearman", s.median_spearman},
          {"mean_abs_log_error", s.mean_abs_log_error},
          {"median_abs_rel_error", s.median_abs_rel_error}};
}

nlohmann::json params_json(const GemmModelParams& p) {
  return {{"matrix_efficiency",
           {{"fp32", p.matrix_efficiency.fp32},
            {"tf32", p.matrix_efficiency.tf32},
            {"fp16", p.matrix_efficiency.fp16},
            {"bf16", p.matrix_efficiency.bf16},
            {"fp8", p.matrix_efficiency.fp8}}},
          {"shared_memory_efficiency", p.shared_memory_efficiency},
          {"l2_bytes_per_clock_per_unit", p.l2_bytes_per_clock_per_unit},
          {"l2_usable_fraction", p.l2_usable_fraction},
          {"hbm_efficiency", p.hbm_efficiency},
          {"loaded_latency_ns", p.loaded_latency_ns},
          {"tile_overhead_exposure", p.tile_overhead_exposure},
          {"launch_overhead_us", p.launch_overhead_us},
          {"legacy_instruction_efficiency", p.legacy_instruction_efficiency},
          {"async_kernel_setup_us", p.async_kernel_setup_us},
          {"tma_l2_rate_factor", p.tma_l2_rate_factor},
          {"simt_l2_rate_factor", p.simt_l2_rate_factor},
          {"family_efficiency", p.family_efficiency}};
}

// The fitted (or judged) parameters' choice on each of `held` beside the oracle and the
// heuristic, split by kernel time, and the selector's CPU cost per new shape.
void judge_choices(const Hardware& hw, GemmCalibrationRun& r, const std::vector<std::size_t>& held) {
  const std::vector<MeasuredShape>& shapes = r.conversion.shapes;
  for (std::size_t i : held) {
    const MeasuredShape& shape = shapes[i];
    const ShapeSelection sel = select_measured(hw, r.fitted, shape);
    GemmCalibrationRun::ShapeChoice c;
    c.id = shape.id;
    if (sel.selected >= 0) c.selected = shape.candidates[std::size_t(sel.selected)].name;
    c.selected_us = sel.selected_us;
    c.oracle_us = sel.oracle_us;
    c.heuristic_us = shape.heuristic_us;
    const auto fastest = std::min_element(shape.candidates.begin(), shape.candidates.end(),
                                          [](const MeasuredCandidate& a, const MeasuredCandidate& b) {
                                            return a.median_us < b.median_us;
                                          });
    c.oracle = fastest->name;
    r.held_out_choices.push_back(std::move(c));
  }

  const auto split = [&](bool short_kernels) {
    std::vector<double> model, heuristic;
    for (const GemmCalibrationRun::ShapeChoice& c : r.held_out_choices) {
      if ((c.oracle_us < kShortKernelUs) != short_kernels || !(c.selected_us > 0.0)) continue;
      model.push_back(c.oracle_us / c.selected_us);
      if (c.heuristic_us > 0.0) heuristic.push_back(std::min(1.0, c.oracle_us / c.heuristic_us));
    }
    return GemmCalibrationRun::ChoicesByKernelTime{model.size(), geomean(model), percentile(model, 0.05),
                                                   geomean(heuristic), percentile(heuristic, 0.05)};
  };
  r.short_kernels = split(true);
  r.longer_kernels = split(false);

  // Selection cost for a new shape: the selector over every described configuration that
  // runs the shape as it is (a transposed kernel's description applies to the transposed
  // product only).
  std::vector<GemmConfig> pool;
  for (const MeasuredShape& s : shapes)
    for (const MeasuredCandidate& c : s.candidates) {
      if (c.transposed) continue;
      if (std::find(pool.begin(), pool.end(), c.config) == pool.end()) pool.push_back(c.config);
      for (const GemmConfig& a : c.alternatives)
        if (std::find(pool.begin(), pool.end(), a) == pool.end()) pool.push_back(a);
    }
  const GemmSelector selector(hw, r.fitted, pool);
  r.selection_pool = pool.size();
  // CPU time of this thread (not wall time: the machine may be shared), over a few passes
  // after a warm-up one, the mean per shape.
  double sink = 0.0;
  const auto select_all = [&] {
    for (std::size_t i : held) {
      try {
        sink += selector.select(shapes[i].problem).estimate.time_us;
      } catch (const ConfigError&) {
      }
    }
  };
  select_all();
  const double t1 = thread_cpu_seconds();
  for (int pass = 0; pass < kSelectionTimingPasses; ++pass) select_all();
  const double seconds = thread_cpu_seconds() - t1;
  r.selection_us_per_shape =
      held.empty() || !(sink > 0.0) ? 0.0 : seconds * 1e6 / double(held.size() * kSelectionTimingPasses);
}

}  // namespace

GemmCalibrationRun run_gemm_calibration(const Hardware& hw, const GemmOracle& oracle, const GemmModelParams& start,
                                        double max_fraction, int folds) {
  if (folds < 1) throw ConfigError("calibration folds must be at least 1, got " + std::to_string(folds));
  GemmCalibrationRun r;
  r.start = start;
  r.conversion = oracle_measurements(hw, oracle);
  const std::vector<MeasuredShape>& shapes = r.conversion.shapes;
  const std::vector<std::size_t> calib = calibration_shape_indices(shapes.size(), max_fraction);
  const std::vector<std::size_t> held = held_out_shape_indices(shapes.size(), calib);
  for (std::size_t i : calib) r.calibration_ids.push_back(shapes[i].id);
  r.held_out_shapes = held.size();

  const auto t0 = std::chrono::steady_clock::now();
  r.fit = fit_gemm_params(hw, shapes, calib, start);
  r.fit_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.fitted = r.fit.params;
  r.fitted.arch = hw.arch;
  r.fitted.note = "fitted by hetrec gemm calibrate to " + std::to_string(calib.size()) + " of " +
                  std::to_string(shapes.size()) + " oracle shapes measured on " + oracle.gpu + " (" + oracle.date + ")";
  r.held_out_before = evaluate_selection(hw, start, shapes, held);
  r.held_out_after = evaluate_selection(hw, r.fitted, shapes, held);
  r.calibration_after = evaluate_selection(hw, r.fitted, shapes, calib);
  r.folds.push_back({kCentredSample, r.calibration_ids, r.held_out_after});
  for (int j = 1; j < folds; ++j) {
    GemmCalibrationRun::Fold f;
    f.position = std::fmod(kCentredSample + double(j) / double(folds), 1.0);
    const std::vector<std::size_t> fold_calib = calibration_shape_indices(shapes.size(), max_fraction, f.position);
    const std::vector<std::size_t> fold_held = held_out_shape_indices(shapes.size(), fold_calib);
    for (std::size_t i : fold_calib) f.calibration_ids.push_back(shapes[i].id);
    const GemmFitResult fold_fit = fit_gemm_params(hw, shapes, fold_calib, start);
    f.held_out = evaluate_selection(hw, fold_fit.params, shapes, fold_held);
    r.folds.push_back(std::move(f));
  }
  judge_choices(hw, r, held);
  return r;
}

GemmCalibrationRun judge_gemm_params(const Hardware& hw, const GemmOracle& oracle, const GemmModelParams& params) {
  GemmCalibrationRun r;
  r.judged_only = true;
  r.start = r.fitted = params;
  r.conversion = oracle_measurements(hw, oracle);
  std::vector<std::size_t> all(r.conversion.shapes.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  r.held_out_shapes = all.size();
  r.held_out_before = r.held_out_after = evaluate_selection(hw, params, r.conversion.shapes, all);
  judge_choices(hw, r, all);
  return r;
}

FoldSpread fold_spread(std::span<const GemmCalibrationRun::Fold> folds) {
  FoldSpread s;
  if (folds.empty()) return s;
  s.geomean_min = s.p5_min = std::numeric_limits<double>::infinity();
  s.geomean_max = s.p5_max = -std::numeric_limits<double>::infinity();
  for (const GemmCalibrationRun::Fold& f : folds) {
    s.geomean_mean += f.held_out.geomean_ratio / double(folds.size());
    s.p5_mean += f.held_out.p5_ratio / double(folds.size());
    s.heuristic_geomean_mean += f.held_out.heuristic_geomean_ratio / double(folds.size());
    s.geomean_min = std::min(s.geomean_min, f.held_out.geomean_ratio);
    s.geomean_max = std::max(s.geomean_max, f.held_out.geomean_ratio);
    s.p5_min = std::min(s.p5_min, f.held_out.p5_ratio);
    s.p5_max = std::max(s.p5_max, f.held_out.p5_ratio);
  }
  return s;
}

void compare_heuristic_lists(GemmCalibrationRun& run, const GemmOracle& oracle, const GemmOracle& lists,
                             const std::string& lists_path) {
  if (lists.gpu != oracle.gpu || lists.cublaslt_version != oracle.cublaslt_version)
    throw ConfigError(lists_path + ": heuristic lists from " + lists.gpu + " (cuBLASLt " + lists.cublaslt_version +
                      "), but the oracle ran on " + oracle.gpu + " (cuBLASLt " + oracle.cublaslt_version + ")");
  std::map<std::string, const OracleShape*> timed, listed;
  for (const OracleShape& s : oracle.shapes) timed[s.id] = &s;
  for (const OracleShape& s : lists.shapes)
    if (!s.heuristic_listed.empty()) listed[s.id] = &s;
  if (listed.empty()) throw ConfigError(lists_path + ": no shape records the heuristic's list (heuristic.listed)");
  GemmCalibrationRun::HeuristicLists h;
  h.record = lists_path;
  std::vector<double> ratios, query_us;
  double listed_total = 0, timed_total = 0;
  for (const GemmCalibrationRun::ShapeChoice& choice : run.held_out_choices) {
    const auto l = listed.find(choice.id);
    const auto t = timed.find(choice.id);
    if (l == listed.end() || t == timed.end()) continue;
    std::map<std::string, double> median_us;
    for (const OracleCandidate& c : t->second->candidates) median_us[c.key] = c.median_us;
    median_us.emplace(t->second->heuristic_key, t->second->heuristic_median_us);
    double best = std::numeric_limits<double>::infinity();
    for (const std::string& key : l->second->heuristic_listed) {
      const auto m = median_us.find(key);
      if (m == median_us.end()) continue;
      best = std::min(best, m->second);
      ++timed_total;
    }
    listed_total += double(l->second->heuristic_listed.size());
    query_us.push_back(l->second->heuristic_list_query_us);
    if (best < std::numeric_limits<double>::infinity()) ratios.push_back(std::min(1.0, choice.oracle_us / best));
  }
  h.shapes = ratios.size();
  if (h.shapes == 0) throw ConfigError(lists_path + ": none of its lists is of a held-out shape of the oracle");
  h.mean_listed = listed_total / double(query_us.size());
  h.mean_timed = timed_total / double(query_us.size());
  h.best_of_list_geomean = geomean(ratios);
  h.best_of_list_p5 = percentile(ratios, 0.05);
  h.query_us_median = percentile(query_us, 0.5);
  h.query_us_p90 = percentile(query_us, 0.9);
  run.heuristic_lists = h;
}

std::string gemm_calibration_json(const GemmCalibrationRun& r, const GemmOracle& oracle, const std::string& oracle_path,
                                  const std::string& command, const std::string& commit, const std::string& date) {
  nlohmann::json j;
  j["benchmark"] = "gemm-selection";
  j["date"] = date;
  j["gpu"] = oracle.gpu;
  j["driver"] = oracle.driver;
  j["cublaslt_version"] = oracle.cublaslt_version;
  j["commit"] = commit;
  j["command"] = command;
  j["oracle"] = {{"file", oracle_path}, {"date", oracle.date}, {"commit", oracle.commit}, {"command", oracle.command}};
  const OracleConversion& c = r.conversion;
  j["shapes"] = {{"in_oracle", oracle.shapes.size()},
                 {"skipped_by_oracle", c.skipped_shapes},
                 {"without_describable_candidate", c.undescribed_shapes},
                 {"used", c.shapes.size()},
                 {"calibration", r.calibration_ids.size()},
                 {"held_out", r.held_out_shapes},
                 {"fastest_kernel_not_describable", c.oracle_undescribed},
                 {"heuristic_timed_faster_than_every_candidate", c.heuristic_faster}};
  j["candidates"] = {{"timed", c.candidates},
                     {"not_describable", c.undescribed},
                     {"kernel_chosen_tiles", c.kernel_chosen_tiles}};
  j["simt_families"] = c.simt_families;
  if (r.judged_only) {
    // No fit: the given parameters judged on every shape.
    j["judged_only"] = true;
    j["params_judged"] = params_json(r.fitted);
    j["all_shapes_judged_params"] = summary_json(r.held_out_after);
  } else {
    j["calibration_shape_ids"] = r.calibration_ids;
    j["fit"] = {{"loss_before", r.fit.loss_before},
                {"loss_after", r.fit.loss_after},
                {"evaluations", r.fit.evaluations},
                {"seconds", r.fit_seconds}};
    j["params_start"] = params_json(r.start);
    j["params_fitted"] = params_json(r.fitted);
    j["held_out_start_params"] = summary_json(r.held_out_before);
    j["held_out_fitted_params"] = summary_json(r.held_out_after);
    j["calibration_fitted_params"] = summary_json(r.calibration_after);
  }
  if (r.folds.size() > 1) {
    nlohmann::json folds = nlohmann::json::array();
    for (const GemmCalibrationRun::Fold& f : r.folds)
      folds.push_back({{"position", f.position}, {"calibration_shape_ids", f.calibration_ids},
                       {"held_out_fitted_params", summary_json(f.held_out)}});
    j["folds"] = folds;
    const FoldSpread spread = fold_spread(r.folds);
    j["folds_summary"] = {{"folds", r.folds.size()},
                          {"geomean_mean", spread.geomean_mean},
                          {"geomean_min", spread.geomean_min},
                          {"geomean_max", spread.geomean_max},
                          {"p5_mean", spread.p5_mean},
                          {"p5_min", spread.p5_min},
                          {"p5_max", spread.p5_max},
                          {"heuristic_geomean_mean", spread.heuristic_geomean_mean}};
  }
  // The results-file metrics of the selection benchmark (the `gemm-selection` names of bench/README.md).
  j["metrics"] = {{"shapes", c.shapes.size()},
                  {"heldout_shapes", r.held_out_shapes},
                  {"heldout_geomean", r.held_out_after.geomean_ratio},
                  {"heldout_p5", r.held_out_after.p5_ratio},
                  {"cublaslt_top1_geomean", r.held_out_after.heuristic_geomean_ratio},
                  {"cublaslt_top1_p5", r.held_out_after.heuristic_p5_ratio},
                  {"heldout_mean_spearman", r.held_out_after.mean_spearman},
                  {"select_us", r.selection_us_per_shape}};
  nlohmann::json choices = nlohmann::json::array();
  for (const GemmCalibrationRun::ShapeChoice& choice : r.held_out_choices)
    choices.push_back({{"id", choice.id},
                       {"selected", choice.selected},
                       {"selected_us", choice.selected_us},
                       {"fastest_described", choice.oracle},
                       {"oracle_us", choice.oracle_us},
                       {"heuristic_us", choice.heuristic_us}});
  j["held_out_choices"] = std::move(choices);
  j["selection_us_per_new_shape"] = r.selection_us_per_shape;
  const auto by_time = [](const GemmCalibrationRun::ChoicesByKernelTime& t) {
    return nlohmann::json{{"shapes", t.shapes},
                          {"geomean_oracle_over_selected", t.model_geomean},
                          {"p5_oracle_over_selected", t.model_p5},
                          {"heuristic_geomean_oracle_over_selected", t.heuristic_geomean},
                          {"heuristic_p5_oracle_over_selected", t.heuristic_p5}};
  };
  j["held_out_by_kernel_time"] = {{"short_kernel_us", kShortKernelUs},
                                  {"short_kernels", by_time(r.short_kernels)},
                                  {"longer_kernels", by_time(r.longer_kernels)}};
  if (r.reproducibility) {
    const OracleReproducibility& o = *r.reproducibility;
    const auto reproduced = [](const ReproducedChoices& rc) {
      return nlohmann::json{{"shapes", rc.shapes}, {"geomean_oracle_over_selected", rc.geomean},
                            {"p5_oracle_over_selected", rc.p5}};
    };
    j["reproducibility"] = {{"repeat", o.repeat},
                            {"note", "the oracle's own fastest configuration per shape, judged on the repeat"},
                            {"all", reproduced(o.all)},
                            {"short_kernel_us", kShortKernelUs},
                            {"short_kernels", reproduced(o.short_kernels)},
                            {"longer_kernels", reproduced(o.longer_kernels)},
                            {"configurations_in_both", o.configurations},
                            {"median_abs_log_ratio", o.median_abs_log_ratio},
                            {"p90_abs_log_ratio", o.p90_abs_log_ratio}};
  }
  if (r.heuristic_lists) {
    const GemmCalibrationRun::HeuristicLists& h = *r.heuristic_lists;
    j["heuristic_lists"] = {{"record", h.record},
                            {"held_out_shapes", h.shapes},
                            {"mean_listed", h.mean_listed},
                            {"mean_listed_and_timed", h.mean_timed},
                            {"best_of_list_geomean_oracle_over_selected", h.best_of_list_geomean},
                            {"best_of_list_p5_oracle_over_selected", h.best_of_list_p5},
                            {"query_us_median", h.query_us_median},
                            {"query_us_p90", h.query_us_p90}};
  }
  j["selection_pool_configs"] = r.selection_pool;
  j["targets"] = {{"geomean_oracle_over_selected", 0.98},
                  {"p5_oracle_over_selected", 0.90},
                  {"selection_us_per_new_shape", 20.0}};
  return j.dump(2) + "\n";
}

}  // namespace hetrec::gemm_perf::gemm_perf
