#include "perf/gemm_calibration.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <set>

#include "core/error.h"
#include "perf/gemm_model.h"

namespace hetrec {
namespace {

// Ranks 1..n with tied values sharing their average rank.
std::vector<double> average_ranks(const std::vector<double>& values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    const double rank = 0.5 * double(i + j) + 1.0;
    for (std::size_t t = i; t <= j; ++t) ranks[order[t]] = rank;
    i = j + 1;
  }
  return ranks;
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = double(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx <= 0 || syy <= 0) return 0.0;
  return sxy / std::sqrt(sxx * syy);
}

// Linear-interpolated percentile of an unsorted sample, q in [0, 1].
double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const std::size_t lo = std::size_t(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0.0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / double(v.size()));
}

// Predicted time of every candidate of a shape; NaN where the model cannot run it.
std::vector<double> predict_candidates(const Hardware& hw, const GemmModelParams& params, const MeasuredShape& shape) {
  std::vector<double> predicted(shape.candidates.size(), std::numeric_limits<double>::quiet_NaN());
  const MatrixPrecision precision = gemm_precision(shape.problem, hw);
  for (std::size_t i = 0; i < shape.candidates.size(); ++i) {
    const GemmKernelTraits traits = gemm_kernel_traits(hw, params, precision, shape.candidates[i].config);
    if (!traits.feasible) continue;
    const GemmSchedule schedule = schedule_gemm(hw, params, shape.problem, shape.candidates[i].config, traits);
    predicted[i] = finish_gemm_estimate(hw, params, shape.problem, shape.candidates[i].config, traits, schedule).time_us;
  }
  return predicted;
}

ShapeSelection select_from_predictions(const MeasuredShape& shape, const std::vector<double>& predicted) {
  ShapeSelection s;
  s.oracle_us = shape.best_measured_us > 0.0 ? shape.best_measured_us : std::numeric_limits<double>::infinity();
  std::vector<double> p, m;
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < shape.candidates.size(); ++i) {
    s.oracle_us = std::min(s.oracle_us, shape.candidates[i].median_us);
    if (std::isnan(predicted[i])) continue;
    p.push_back(predicted[i]);
    m.push_back(shape.candidates[i].median_us);
    if (predicted[i] < best) {
      best = predicted[i];
      s.selected = int(i);
    }
  }
  s.predicted = p.size();
  if (s.selected >= 0) s.selected_us = shape.candidates[std::size_t(s.selected)].median_us;
  if (p.size() >= 3) s.spearman = pearson(average_ranks(p), average_ranks(m));
  return s;
}

void check_shape(const MeasuredShape& shape) {
  if (shape.candidates.empty()) throw ConfigError("measured GEMM shape '" + shape.id + "' has no candidates");
  for (const MeasuredCandidate& c : shape.candidates)
    if (!(c.median_us > 0.0) || !std::isfinite(c.median_us))
      throw ConfigError("measured GEMM shape '" + shape.id + "' candidate '" + c.name + "' has a non-positive time");
}

// One fitted parameter: where it lives in GemmModelParams and its physical range.
struct FitParameter {
  std::string name;
  std::function<double&(GemmModelParams&)> ref;
  double lo, hi;
};

std::vector<FitParameter> fit_parameters(const Hardware& hw, std::span<const MeasuredShape> shapes,
                                         std::span<const std::size_t> calibration) {
  std::vector<FitParameter> out;
  bool used[std::size(kAllMatrixPrecisions)] = {};
  for (std::size_t i : calibration) used[std::size_t(gemm_precision(shapes[i].problem, hw))] = true;
  // Matrix-pipe efficiency: at most the datasheet rate, at least a tenth of it.
  auto add_precision = [&](MatrixPrecision p, const char* name, double PrecisionEfficiency::*field) {
    if (used[std::size_t(p)])
      out.push_back({std::string("matrix_efficiency.") + name,
                     [field](GemmModelParams& q) -> double& { return q.matrix_efficiency.*field; }, 0.1, 1.0});
  };
  add_precision(MatrixPrecision::fp32, "fp32", &PrecisionEfficiency::fp32);
  add_precision(MatrixPrecision::tf32, "tf32", &PrecisionEfficiency::tf32);
  add_precision(MatrixPrecision::fp16, "fp16", &PrecisionEfficiency::fp16);
  add_precision(MatrixPrecision::bf16, "bf16", &PrecisionEfficiency::bf16);
  add_precision(MatrixPrecision::fp8, "fp8", &PrecisionEfficiency::fp8);
  out.push_back({"shared_memory_efficiency", [](GemmModelParams& q) -> double& { return q.shared_memory_efficiency; },
                 0.2, 1.0});
  // L2 -> unit bandwidth: 8 to 512 bytes per clock per unit brackets every published figure.
  out.push_back({"l2_bytes_per_clock_per_unit",
                 [](GemmModelParams& q) -> double& { return q.l2_bytes_per_clock_per_unit; }, 8.0, 512.0});
  out.push_back({"l2_usable_fraction", [](GemmModelParams& q) -> double& { return q.l2_usable_fraction; }, 0.05, 1.0});
  out.push_back({"hbm_efficiency", [](GemmModelParams& q) -> double& { return q.hbm_efficiency; }, 0.3, 1.0});
  // Loaded latency: 100 ns (an L2 hit) to 5 us (deep queueing).
  out.push_back({"loaded_latency_ns", [](GemmModelParams& q) -> double& { return q.loaded_latency_ns; }, 100.0, 5000.0});
  out.push_back({"tile_overhead_exposure", [](GemmModelParams& q) -> double& { return q.tile_overhead_exposure; },
                 0.01, 2.0});
  // A kernel launch in a stream: 0.5 us (graph replay) to 20 us.
  out.push_back({"launch_overhead_us", [](GemmModelParams& q) -> double& { return q.launch_overhead_us; }, 0.5, 20.0});
  // Library kernel families seen in the calibration shapes: a factor each.
  std::set<std::string> families;
  for (std::size_t i : calibration)
    for (const MeasuredCandidate& c : shapes[i].candidates)
      if (c.config.family >= 0) families.insert(family_key(gemm_precision(shapes[i].problem, hw), c.config.family));
  for (const std::string& key : families)
    out.push_back({"family_efficiency." + key,
                   [key](GemmModelParams& q) -> double& { return q.family_efficiency.try_emplace(key, 1.0).first->second; },
                   0.02, 2.0});
  return out;
}

}  // namespace

std::vector<std::size_t> calibration_shape_indices(std::size_t shape_count, double max_fraction) {
  if (shape_count == 0) return {};
  if (!(max_fraction > 0.0) || max_fraction > 1.0)
    throw ConfigError("calibration fraction must be in (0, 1], got " + std::to_string(max_fraction));
  const std::size_t count = std::max<std::size_t>(1, std::size_t(std::floor(max_fraction * double(shape_count))));
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < count; ++i) {
    // Centre of the i-th of `count` equal blocks.
    out.push_back(std::min(shape_count - 1, std::size_t((double(i) + 0.5) * double(shape_count) / double(count))));
  }
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::size_t> held_out_shape_indices(std::size_t shape_count, std::span<const std::size_t> calibration) {
  std::vector<bool> taken(shape_count, false);
  for (std::size_t i : calibration)
    if (i < shape_count) taken[i] = true;
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < shape_count; ++i)
    if (!taken[i]) out.push_back(i);
  return out;
}

ShapeSelection select_measured(const Hardware& hw, const GemmModelParams& params, const MeasuredShape& shape) {
  check_shape(shape);
  return select_from_predictions(shape, predict_candidates(hw, params, shape));
}

SelectionSummary evaluate_selection(const Hardware& hw, const GemmModelParams& params,
                                    std::span<const MeasuredShape> shapes, std::span<const std::size_t> indices) {
  SelectionSummary s;
  std::vector<double> ratios, heuristic_ratios, spearmans, abs_log, abs_rel;
  for (std::size_t idx : indices) {
    const MeasuredShape& shape = shapes[idx];
    check_shape(shape);
    const std::vector<double> predicted = predict_candidates(hw, params, shape);
    const ShapeSelection sel = select_from_predictions(shape, predicted);
    ++s.shapes;
    if (sel.selected < 0) {
      ++s.unpredicted;
      ratios.push_back(0.0);  // counts against the model: it could not choose
      continue;
    }
    ratios.push_back(sel.oracle_us / sel.selected_us);
    if (shape.heuristic_us > 0.0) heuristic_ratios.push_back(std::min(1.0, sel.oracle_us / shape.heuristic_us));
    if (sel.predicted >= 3) spearmans.push_back(sel.spearman);
    for (std::size_t i = 0; i < predicted.size(); ++i) {
      if (std::isnan(predicted[i])) continue;
      abs_log.push_back(std::abs(std::log(predicted[i] / shape.candidates[i].median_us)));
      abs_rel.push_back(std::abs(predicted[i] / shape.candidates[i].median_us - 1.0));
    }
  }
  std::vector<double> positive;
  for (double r : ratios)
    if (r > 0) positive.push_back(r);
  // A shape the model cannot choose for is counted as the worst observed ratio halved.
  const double floor_ratio = positive.empty() ? 1e-3 : 0.5 * *std::min_element(positive.begin(), positive.end());
  for (double& r : ratios)
    if (r <= 0) r = floor_ratio;
  s.geomean_ratio = geomean(ratios);
  s.p5_ratio = percentile(ratios, 0.05);
  s.min_ratio = ratios.empty() ? 0.0 : *std::min_element(ratios.begin(), ratios.end());
  s.heuristic_shapes = heuristic_ratios.size();
  s.heuristic_geomean_ratio = geomean(heuristic_ratios);
  s.heuristic_p5_ratio = percentile(heuristic_ratios, 0.05);
  if (!spearmans.empty()) {
    s.mean_spearman = std::accumulate(spearmans.begin(), spearmans.end(), 0.0) / double(spearmans.size());
    s.median_spearman = percentile(spearmans, 0.5);
  }
  if (!abs_log.empty()) s.mean_abs_log_error = std::accumulate(abs_log.begin(), abs_log.end(), 0.0) / double(abs_log.size());
  s.median_abs_rel_error = percentile(abs_rel, 0.5);
  return s;
}

double gemm_fit_loss(const Hardware& hw, const GemmModelParams& params, std::span<const MeasuredShape> shapes,
                     std::span<const std::size_t> indices) {
  double accuracy = 0.0, regret = 0.0;
  std::size_t points = 0, chosen = 0;
  for (std::size_t idx : indices) {
    const MeasuredShape& shape = shapes[idx];
    const std::vector<double> predicted = predict_candidates(hw, params, shape);
    for (std::size_t i = 0; i < predicted.size(); ++i) {
      if (std::isnan(predicted[i])) continue;
      const double e = std::log(predicted[i] / shape.candidates[i].median_us);
      accuracy += e * e;
      ++points;
    }
    const ShapeSelection sel = select_from_predictions(shape, predicted);
    if (sel.selected >= 0) {
      regret += std::log(sel.selected_us / sel.oracle_us);
      ++chosen;
    }
  }
  if (points == 0) return std::numeric_limits<double>::infinity();
  return accuracy / double(points) + kRegretWeight * (chosen ? regret / double(chosen) : 0.0);
}

GemmFitResult fit_gemm_params(const Hardware& hw, std::span<const MeasuredShape> shapes,
                              std::span<const std::size_t> calibration, const GemmModelParams& start,
                              const GemmFitOptions& options) {
  if (calibration.empty()) throw ConfigError("GEMM calibration needs at least one measured shape");
  for (std::size_t i : calibration) {
    if (i >= shapes.size()) throw ConfigError("calibration shape index out of range");
    check_shape(shapes[i]);
  }
  GemmFitResult r;
  r.params = start;
  std::vector<FitParameter> fitted = fit_parameters(hw, shapes, calibration);
  for (FitParameter& p : fitted) p.ref(r.params) = std::clamp(p.ref(r.params), p.lo, p.hi);
  double best = gemm_fit_loss(hw, r.params, shapes, calibration);
  r.loss_before = best;
  r.evaluations = 1;
  double step = options.initial_step;
  for (int round = 0; round < options.max_rounds && step >= options.min_step; ++round) {
    bool improved = false;
    for (FitParameter& p : fitted) {
      for (double direction : {+1.0, -1.0}) {
        GemmModelParams trial = r.params;
        double& v = p.ref(trial);
        const double moved = std::clamp(v * std::exp(direction * step), p.lo, p.hi);
        if (moved == v) continue;
        v = moved;
        const double loss = gemm_fit_loss(hw, trial, shapes, calibration);
        ++r.evaluations;
        if (loss < best - 1e-12) {
          best = loss;
          r.params = trial;
          improved = true;
          break;
        }
      }
    }
    if (!improved) step *= 0.5;
  }
  r.loss_after = best;
  r.params.calibrated = true;
  return r;
}

}  // namespace hetrec
