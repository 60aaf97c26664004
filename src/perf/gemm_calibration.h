#pragma once
// Fitting the GEMM model's per-architecture parameters (perf/gemm_model_params.h) to
// measured kernel times, and judging the selection the fitted model makes on shapes the fit
// never saw.
//
// Input: for each shape of a benchmark suite, every valid library kernel configuration with
// its measured median time (the exhaustive oracle of `hetrec gemm bench`), and the time of
// the library's own heuristic choice. A small, evenly spread subset of the shapes (at most
// `max_fraction` of them) is used for the fit; every other shape is held out.
//
// The fit minimises, over the calibration shapes,
//   mean over (shape, candidate) of (log predicted - log measured)^2       [accuracy]
//   + kRegretWeight * mean over shapes of log(measured(selected) / oracle) [selection]
// by a bounded coordinate (pattern) search in the log of each parameter: the objective is
// piecewise (max() of bounds, argmin), so no gradients are taken.
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "hw/hardware.h"
#include "perf/gemm_config.h"
#include "perf/gemm_model_params.h"
#include "perf/gemm_problem.h"

namespace hetrec {

// Weight of the selection regret beside the log accuracy term. Equal weight: a 10% worse
// selection on every shape costs as much as a 33% error on every prediction (0.1 vs 0.33^2).
inline constexpr double kRegretWeight = 1.0;

struct MeasuredCandidate {
  std::string name;  // the library's identity of the kernel (algorithm id, tile, stages, ...)
  GemmConfig config;
  double median_us = 0.0;
};

struct MeasuredShape {
  std::string id;
  GemmProblem problem;
  std::vector<MeasuredCandidate> candidates;  // valid, verified kernels only
  double heuristic_us = 0.0;                  // the library heuristic's top-1; 0 = not timed
  // The least time measured on the shape by any kernel, including ones the model cannot
  // describe (0 = only `candidates` were timed). The oracle of the selection statistics.
  double best_measured_us = 0.0;
};

// Indices of the calibration shapes: floor(max_fraction * n) of them (at least one), spread
// evenly over the suite's order so that every model, width and precision block is touched.
std::vector<std::size_t> calibration_shape_indices(std::size_t shape_count, double max_fraction);
// The complement of `calibration` in [0, shape_count).
std::vector<std::size_t> held_out_shape_indices(std::size_t shape_count, std::span<const std::size_t> calibration);

// The model's choice for one measured shape: the candidate with the least predicted time
// (first one on ties). -1 when the model can run none of them.
struct ShapeSelection {
  int selected = -1;
  double selected_us = 0.0;  // measured time of the selected candidate
  double oracle_us = 0.0;    // least measured time
  double spearman = 0.0;     // rank correlation of predicted vs measured over candidates
  std::size_t predicted = 0; // candidates the model could predict
};
ShapeSelection select_measured(const Hardware& hw, const GemmModelParams& params, const MeasuredShape& shape);

struct SelectionSummary {
  std::size_t shapes = 0;          // shapes evaluated
  std::size_t unpredicted = 0;     // shapes where the model could predict no candidate
  double geomean_ratio = 0.0;      // geomean of oracle / selected
  double p5_ratio = 0.0;           // 5th percentile of oracle / selected
  double min_ratio = 0.0;
  double heuristic_geomean_ratio = 0.0;  // the same for the library heuristic (shapes where timed)
  double heuristic_p5_ratio = 0.0;
  std::size_t heuristic_shapes = 0;
  double mean_spearman = 0.0;      // over shapes with at least 3 predicted candidates
  double median_spearman = 0.0;
  double mean_abs_log_error = 0.0; // mean |log(predicted / measured)| over all candidates
  double median_abs_rel_error = 0.0;  // median |predicted / measured - 1|
};
SelectionSummary evaluate_selection(const Hardware& hw, const GemmModelParams& params,
                                    std::span<const MeasuredShape> shapes, std::span<const std::size_t> indices);

struct GemmFitOptions {
  int max_rounds = 80;        // pattern-search rounds (each tries every parameter both ways)
  double initial_step = 0.5;  // in log space: x1.65 / x0.61
  double min_step = 0.01;
};

struct GemmFitResult {
  GemmModelParams params;
  double loss_before = 0.0;
  double loss_after = 0.0;
  int evaluations = 0;
};

// Fits the parameters of the precisions present in the calibration shapes, plus the shared
// ones (shared-memory and HBM efficiency, L2 bandwidth and usable share, loaded latency,
// tile overhead exposure, launch overhead), each kept in a physical range.
GemmFitResult fit_gemm_params(const Hardware& hw, std::span<const MeasuredShape> shapes,
                              std::span<const std::size_t> calibration, const GemmModelParams& start,
                              const GemmFitOptions& options = {});

// The objective above (exposed for tests).
double gemm_fit_loss(const Hardware& hw, const GemmModelParams& params, std::span<const MeasuredShape> shapes,
                     std::span<const std::size_t> indices);

}  // namespace hetrec
