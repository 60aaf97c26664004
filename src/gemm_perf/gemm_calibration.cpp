#include "gemm_perf/gemm_calibration.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "core/error.h"
#include "gemm_perf/gemm_model.h"

namespace hetrec::inline gemm_perf {
namespace {

// Least L2 -> unit bandwidth the fit may reach, bytes per clock per unit: the HBM's datasheet
// bandwidth spread over the units. Every byte from HBM passes through the L2, so the L2
// delivers at least that much. (The A100 whitepaper's 5120 bytes per clock over 108 SMs,
// 47 per SM, was the floor before: the fit sat on it for Hopper, whose L2 feeds an SM more
// slowly than that peak figure suggests.)
double l2_bytes_per_clock_per_unit_floor(const Hardware& hw) {
  return hw.hbm_tbs * 1e12 / (double(hw.compute_units) * hw.clock_mhz * 1e6);
}
// Least decrease of the objective that counts as an improvement.
constexpr double kFitImprovement = 1e-12;

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

// Predicted time of every candidate of a shape; NaN where the model cannot run it.
std::vector<double> predict_candidates(const Hardware& hw, const GemmModelParams& params, const MeasuredShape& shape) {
  std::vector<double> predicted(shape.candidates.size());
  const GemmProblem transposed_problem = transposed_product(shape.problem);
  for (std::size_t i = 0; i < shape.candidates.size(); ++i)
  {
    const MeasuredCandidate& c = shape.candidates[i];
    predicted[i] = predict_best_of(hw, params, c.transposed ? transposed_problem : shape.problem, c.config, c.alternatives);
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

// One fitted parameter: how to read and write it in GemmModelParams, its physical range, and
// whether it is a per-family correction (pulled toward 1 by the objective's prior term).
struct FitParameter {
  std::string name;
  std::function<double(const GemmModelParams&)> get;
  std::function<void(GemmModelParams&, double)> set;
  double lo, hi;
  bool family_correction = false;
};

FitParameter scalar(std::string name, double GemmModelParams::*field, double lo, double hi) {
  return {std::move(name), [field](const GemmModelParams& q) { return q.*field; },
          [field](GemmModelParams& q, double v) { q.*field = v; }, lo, hi};
}

// What the calibration shapes' kernels use: their pipes (GemmKernelTraits::pipe), families,
// and whether any issues the previous generation's instruction, is an async-copy (TMA-fed)
// kernel or a SIMT one.
struct CalibrationKernels {
  std::set<MatrixPrecision> pipes;
  std::set<std::string> families;
  bool legacy_instruction = false;
  bool async_kernel = false;
  bool simt_kernel = false;
};

CalibrationKernels calibration_kernels(const Hardware& hw, std::span<const MeasuredShape> shapes,
                                       std::span<const std::size_t> calibration) {
  CalibrationKernels k;
  for (std::size_t i : calibration) {
    const MatrixPrecision precision = gemm_precision(shapes[i].problem, hw);
    for (const MeasuredCandidate& c : shapes[i].candidates) {
      const GemmKernelTraits t = gemm_kernel_traits(hw, GemmModelParams{}, precision, c.config);
      if (!t.feasible) continue;
      k.pipes.insert(t.pipe);
      if (c.config.family >= 0) k.families.insert(family_key(c.config.family, c.config.family_variant));
      k.legacy_instruction = k.legacy_instruction || t.legacy_instruction;
      k.async_kernel = k.async_kernel || !t.warp_scope;
      k.simt_kernel = k.simt_kernel || t.simt;
    }
  }
  return k;
}

std::vector<FitParameter> fit_parameters(const Hardware& hw, std::span<const MeasuredShape> shapes,
                                         std::span<const std::size_t> calibration) {
  std::vector<FitParameter> out;
  const CalibrationKernels used = calibration_kernels(hw, shapes, calibration);
  const auto uses = [&](MatrixPrecision p) { return used.pipes.count(p) > 0; };
  // Matrix-pipe efficiency: at most the datasheet rate, at least a tenth of it.
  constexpr double kEfficiencyLo = 0.1, kEfficiencyHi = 1.0;
  const auto add_precision = [&](const char* name, std::initializer_list<double PrecisionValues::*> fields) {
    std::vector<double PrecisionValues::*> f(fields);
    out.push_back({std::string("matrix_efficiency.") + name,
                   [f](const GemmModelParams& q) { return q.matrix_efficiency.*f.front(); },
                   [f](GemmModelParams& q, double v) {
                     for (auto field : f) q.matrix_efficiency.*field = v;
                   },
                   kEfficiencyLo, kEfficiencyHi});
  };
  // What the hardware file's [measured] section pins down is held at its starting value,
  // which the measurement set (the large bf16 GEMM rate, the copy bandwidth): the fit
  // cannot trade a measured quantity against the unmeasured ones.
  const bool measured_gemm = hw.measured && hw.measured->bf16_gemm_tflops_low;
  const bool measured_copy = hw.measured && hw.measured->copy_tbs;
  if (uses(MatrixPrecision::fp32)) add_precision("fp32", {&PrecisionValues::fp32});
  // The tensor-core precisions share one datapath whose per-precision rates the datasheet
  // gives; what is left (clock under load, issue) is common to them: one efficiency.
  if (!measured_gemm && (uses(MatrixPrecision::tf32) || uses(MatrixPrecision::bf16) ||
                         uses(MatrixPrecision::fp16) || uses(MatrixPrecision::fp8)))
    add_precision("tensor", {&PrecisionValues::tf32, &PrecisionValues::fp16, &PrecisionValues::bf16,
                             &PrecisionValues::fp8});
  if (used.legacy_instruction)
    out.push_back(scalar("legacy_instruction_efficiency", &GemmModelParams::legacy_instruction_efficiency, 0.1, 1.0));
  // Bank conflicts and swizzle arithmetic cost tuned kernels at most half the banks' rate.
  out.push_back(scalar("shared_memory_efficiency", &GemmModelParams::shared_memory_efficiency, 0.5, 1.0));
  // L2 -> unit bandwidth: at least the HBM's share per unit; 512 is above every published figure.
  out.push_back(scalar("l2_bytes_per_clock_per_unit", &GemmModelParams::l2_bytes_per_clock_per_unit,
                       l2_bytes_per_clock_per_unit_floor(hw), 512.0));
  // The TMA and SIMT load paths' L2 rates relative to it, where the calibration kernels use them.
  if (used.async_kernel)
    out.push_back(scalar("tma_l2_rate_factor", &GemmModelParams::tma_l2_rate_factor, 1.0 / kMaxL2RateFactor,
                         kMaxL2RateFactor));
  if (used.simt_kernel)
    out.push_back(scalar("simt_l2_rate_factor", &GemmModelParams::simt_l2_rate_factor, 1.0 / kMaxL2RateFactor,
                         kMaxL2RateFactor));
  out.push_back(scalar("l2_usable_fraction", &GemmModelParams::l2_usable_fraction, 0.05, 1.0));
  if (!measured_copy) out.push_back(scalar("hbm_efficiency", &GemmModelParams::hbm_efficiency, 0.3, 1.0));
  // Loaded latency: 100 ns (an L2 hit) to 5 us (deep queueing).
  out.push_back(scalar("loaded_latency_ns", &GemmModelParams::loaded_latency_ns, 100.0, 5000.0));
  // A share: none to all of a tile's fill and epilogue exposed.
  out.push_back(scalar("tile_overhead_exposure", &GemmModelParams::tile_overhead_exposure, 0.01, 1.0));
  // A kernel launch in a stream: 0.5 us (graph replay) to 20 us.
  out.push_back(scalar("launch_overhead_us", &GemmModelParams::launch_overhead_us, 0.5, 20.0));
  // Start-up of an async-copy kernel: 0.1 us (one descriptor fetch) to 10 us.
  if (used.async_kernel)
    out.push_back(scalar("async_kernel_setup_us", &GemmModelParams::async_kernel_setup_us, 0.1, 10.0));
  // Library kernel families seen in the calibration shapes: a correction each, within a
  // factor kFamilyFactorRange of the pipe's efficiency.
  for (const std::string& key : used.families)
    out.push_back({"family_efficiency." + key,
                   [key](const GemmModelParams& q) {
                     const auto it = q.family_efficiency.find(key);
                     return it == q.family_efficiency.end() ? 1.0 : it->second;
                   },
                   [key](GemmModelParams& q, double v) { q.family_efficiency[key] = v; }, 1.0 / kFamilyFactorRange,
                   kFamilyFactorRange, true});
  return out;
}

// The prior on the family corrections: mean over them of log(factor)^2.
double family_prior(const GemmModelParams& params, std::span<const FitParameter> fitted) {
  double sum = 0.0;
  std::size_t count = 0;
  for (const FitParameter& p : fitted) {
    if (!p.family_correction) continue;
    const double l = std::log(p.get(params));
    sum += l * l;
    ++count;
  }
  return count ? sum / double(count) : 0.0;
}

}  // namespace

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

std::vector<std::size_t> calibration_shape_indices(std::size_t shape_count, double max_fraction, double position) {
  if (shape_count == 0) return {};
  if (!(max_fraction > 0.0) || max_fraction > 1.0)
    throw ConfigError("calibration fraction must be in (0, 1], got " + std::to_string(max_fraction));
  if (!(position >= 0.0) || position >= 1.0)
    throw ConfigError("calibration sample position must be in [0, 1), got " + std::to_string(position));
  const std::size_t count = std::max<std::size_t>(1, std::size_t(std::floor(max_fraction * double(shape_count))));
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < count; ++i) {
    // `position` within the i-th of `count` equal blocks.
    out.push_back(
        std::min(shape_count - 1, std::size_t((double(i) + position) * double(shape_count) / double(count))));
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
  std::size_t scored = 0, chosen = 0;
  for (std::size_t idx : indices) {
    const MeasuredShape& shape = shapes[idx];
    const std::vector<double> predicted = predict_candidates(hw, params, shape);
    // Squared log errors summed per kernel family: each family weighs the same in the
    // shape however many configurations the library offers of it, so that a family the
    // model mispredicts badly cannot hide behind a numerous one (the selection picks
    // across families).
    std::map<std::pair<int, int>, std::pair<double, std::size_t>> families;
    for (std::size_t i = 0; i < predicted.size(); ++i) {
      if (std::isnan(predicted[i])) continue;
      const double e = std::log(predicted[i] / shape.candidates[i].median_us);
      const GemmConfig& config = shape.candidates[i].config;
      auto& [sum, count] = families[{config.family, config.family_variant}];
      sum += e * e;
      ++count;
    }
    if (!families.empty()) {
      double shape_sum = 0.0;
      for (const auto& [family, acc] : families) shape_sum += acc.first / double(acc.second);
      accuracy += shape_sum / double(families.size());
      ++scored;
    }
    const ShapeSelection sel = select_from_predictions(shape, predicted);
    if (sel.selected >= 0) {
      regret += std::log(sel.selected_us / sel.oracle_us);
      ++chosen;
    }
  }
  if (scored == 0) return std::numeric_limits<double>::infinity();
  return accuracy / double(scored) + kRegretWeight * (chosen ? regret / double(chosen) : 0.0);
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
  for (FitParameter& p : fitted) p.set(r.params, std::clamp(p.get(r.params), p.lo, p.hi));
  const auto objective = [&](const GemmModelParams& q) {
    return gemm_fit_loss(hw, q, shapes, calibration) + kFamilyPriorWeight * family_prior(q, fitted);
  };
  double best = objective(r.params);
  r.loss_before = best;
  r.evaluations = 1;
  // Pattern searches from the full step until one no longer improves: a search that has
  // narrowed its step can stop in a corner that a wide step leaves again.
  for (int search = 0; search < options.max_searches; ++search) {
    const double search_start = best;
    double step = options.initial_step;
    for (int round = 0; round < options.max_rounds && step >= options.min_step; ++round) {
      bool improved = false;
      const GemmModelParams round_start = r.params;
      for (FitParameter& p : fitted) {
        for (double direction : {+1.0, -1.0}) {
          GemmModelParams trial = r.params;
          const double v = p.get(trial);
          const double moved = std::clamp(v * std::exp(direction * step), p.lo, p.hi);
          if (moved == v) continue;
          p.set(trial, moved);
          const double loss = objective(trial);
          ++r.evaluations;
          if (loss < best - kFitImprovement) {
            best = loss;
            r.params = trial;
            improved = true;
            break;
          }
        }
      }
      if (!improved) {
        step *= 0.5;
        continue;
      }
      // Pattern move (Hooke and Jeeves): repeat the round's whole displacement in log space,
      // which follows valleys along which several parameters must move together (a pipe's
      // efficiency against its families' corrections) that single-parameter steps cannot.
      GemmModelParams trial = r.params;
      for (FitParameter& p : fitted) {
        const double now = p.get(r.params), before = p.get(round_start);
        p.set(trial, std::clamp(now * now / before, p.lo, p.hi));
      }
      const double loss = objective(trial);
      ++r.evaluations;
      if (loss < best - kFitImprovement) {
        best = loss;
        r.params = trial;
      }
    }
    if (best > search_start - kFitImprovement) break;
  }
  r.loss_after = best;
  r.params.calibrated = true;
  return r;
}

}  // namespace hetrec::gemm_perf::gemm_perf
