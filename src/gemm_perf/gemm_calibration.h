#pragma once
// Fitting the GEMM model's per-architecture parameters (gemm_perf/gemm_model_params.h) to
// measured kernel times, and judging the selection the fitted model makes on shapes the fit
// never saw.
//
// Input: for each shape of a benchmark suite, every valid library kernel configuration with
// its measured median time (the exhaustive oracle of `hetrec gemm bench`), and the time of
// the library's own heuristic choice. A small, evenly spread subset of the shapes (at most
// `max_fraction` of them) is used for the fit; every other shape is held out.
//
// The fit minimises, over the calibration shapes,
//   mean over shapes of (mean over the shape's kernel families of
//                        (mean over the family's candidates of (log predicted - log measured)^2))  [accuracy]
//   + kRegretWeight * mean over shapes of log(measured(selected) / oracle)            [selection]
//   + kFamilyPriorWeight * mean over fitted family corrections of log(factor)^2        [prior]
// by a bounded coordinate (pattern) search in the log of each parameter: the objective is
// piecewise (max() of bounds, argmin), so no gradients are taken. Each shape weighs the
// same however many configurations the library offered for it, and within a shape each
// kernel family (algorithm id) the same however many configurations it has: a family the
// model mispredicts badly but the library offers rarely then still moves the fit (the
// first per-candidate weighting left one such family predicted 8x too fast, and chosen). The prior keeps the
// per-family corrections near 1, so that what all kernels of a pipe share (its efficiency,
// the previous-generation instruction's rate) is carried by the physical parameters rather
// than traded against the corrections.
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "hw/hardware.h"
#include "gemm_perf/gemm_config.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_problem.h"

namespace hetrec::inline gemm_perf {

// Weight of the selection regret beside the log accuracy term. Equal weight: a 10% worse
// selection on every shape costs as much as a 33% error on every prediction (0.1 vs 0.33^2).
inline constexpr double kRegretWeight = 1.0;
// Weight of the prior on the family corrections: a factor of 2 (log 0.69) on every fitted
// family costs 0.12, as much as a 35% error on every prediction.
inline constexpr double kFamilyPriorWeight = 0.25;
// Range of a family correction: within a factor 4 of the pipe's modelled speed either way.
inline constexpr double kFamilyFactorRange = 4.0;

struct MeasuredCandidate {
  std::string name;  // the library's identity of the kernel (algorithm id, tile, stages, ...)
  GemmConfig config;
  double median_us = 0.0;
  // Further configurations the kernel may run as when it chooses something itself (its tile
  // or its cluster): the kernel is predicted as the fastest of `config` and these.
  std::vector<GemmConfig> alternatives;
  // The kernel computes the transposed product (transposed_product of the shape's problem),
  // as the library's warpgroup kernels do for tiles with fewer rows than the instruction.
  bool transposed = false;
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
// evenly over the suite's order so that every model, width and precision block is touched:
// the shape at `position` (in [0, 1); 0.5 = the centre) of each of that many equal blocks.
// Other positions give other, disjoint samples of the same spread (cross-validation folds).
std::vector<std::size_t> calibration_shape_indices(std::size_t shape_count, double max_fraction,
                                                   double position = 0.5);
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

// Linear-interpolated percentile of an unsorted sample, q in [0, 1]; 0 when empty.
double percentile(std::vector<double> v, double q);
// Geometric mean of positive values; 0 when empty.
double geomean(const std::vector<double>& v);

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
  // Pattern search (Hooke and Jeeves) in log space: rounds that try every parameter both
  // ways, each improving round followed by a pattern move.
  int max_rounds = 80;
  int max_searches = 4;       // searches restarted from initial_step while they still improve
  double initial_step = 0.5;  // in log space: x1.65 / x0.61
  double min_step = 0.01;
};

struct GemmFitResult {
  GemmModelParams params;
  double loss_before = 0.0;
  double loss_after = 0.0;
  int evaluations = 0;
};

// Fits, each within a physical range: the fp32 (SIMT) efficiency and one efficiency for all
// tensor-core precisions, where the calibration kernels use those pipes; the previous-
// generation instruction's share and the async-copy kernels' start-up, where they occur;
// shared-memory efficiency, L2 bandwidth and usable share, HBM efficiency, loaded latency,
// tile overhead exposure, launch overhead; and a correction per kernel family seen. What
// the hardware file measures (its [measured] large bf16 GEMM rate and copy bandwidth) is
// held at the starting value: the tensor-core efficiency and the HBM efficiency.
GemmFitResult fit_gemm_params(const Hardware& hw, std::span<const MeasuredShape> shapes,
                              std::span<const std::size_t> calibration, const GemmModelParams& start,
                              const GemmFitOptions& options = {});

// The objective above (exposed for tests).
double gemm_fit_loss(const Hardware& hw, const GemmModelParams& params, std::span<const MeasuredShape> shapes,
                     std::span<const std::size_t> indices);

}  // namespace hetrec::gemm_perf::gemm_perf
