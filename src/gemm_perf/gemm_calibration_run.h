#pragma once
// `hetrec gemm calibrate`: fit the GEMM model's parameters to an oracle file on at most a
// small share of its shapes and judge the fitted model's selection on all the others.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hw/hardware.h"
#include "gemm_perf/gemm_calibration.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_oracle.h"
#include "gemm_perf/gemm_oracle_measurements.h"
#include "gemm_perf/gemm_oracle_repeat.h"

namespace hetrec::inline gemm_perf {

struct GemmCalibrationRun {
  // Set by judge_gemm_params: no fit; `fitted` are the given parameters and every shape is
  // "held out".
  bool judged_only = false;
  OracleConversion conversion;
  std::vector<std::string> calibration_ids;  // shapes the fit saw
  std::size_t held_out_shapes = 0;
  GemmModelParams start, fitted;
  GemmFitResult fit;
  SelectionSummary held_out_before;  // the starting parameters on the held-out shapes
  SelectionSummary held_out_after;   // the fitted parameters on the same shapes
  SelectionSummary calibration_after;
  // CPU time (this thread) of GemmSelector over the union of described configurations.
  double selection_us_per_shape = 0.0;
  std::size_t selection_pool = 0;  // configurations in that union
  double fit_seconds = 0.0;
  // The fitted model's choice on each held-out shape, beside the oracle and the heuristic.
  struct ShapeChoice {
    std::string id;
    std::string selected;  // the chosen candidate's library key ("" when none)
    double selected_us = 0.0, oracle_us = 0.0, heuristic_us = 0.0;
    std::string oracle;  // the fastest described candidate's key
  };
  std::vector<ShapeChoice> held_out_choices;
  // The held-out choices split at kShortKernelUs of the oracle time (gemm_oracle_repeat.h:
  // below it, run-to-run variation alone costs a selector several percent).
  struct ChoicesByKernelTime {
    std::size_t shapes = 0;
    double model_geomean = 0.0, model_p5 = 0.0, heuristic_geomean = 0.0, heuristic_p5 = 0.0;
  };
  ChoicesByKernelTime short_kernels, longer_kernels;

  // On the held-out shapes, the best of cuBLASLt's own first choices (timed by the oracle):
  // what any re-ranking of the heuristic's list could reach at most. Set by
  // compare_heuristic_lists, from a `gemm bench` record that lists them.
  struct HeuristicLists {
    std::size_t shapes = 0;        // held-out shapes with a list
    double mean_listed = 0.0;      // configurations per list
    double mean_timed = 0.0;       // of them, timed by the oracle
    double best_of_list_geomean = 0.0, best_of_list_p5 = 0.0;  // oracle / fastest listed
    double query_us_median = 0.0, query_us_p90 = 0.0;  // CPU time of the heuristic's query
    std::string record;            // the record the lists came from
  };
  std::optional<HeuristicLists> heuristic_lists;
  // How far a repeat of the oracle reproduces its choices (set by the caller).
  std::optional<OracleReproducibility> reproducibility;

  // Cross-validation: the same fit repeated on other, disjoint calibration samples of the
  // same size and spread (fold 0 is the fit above), each judged on its own held-out shapes.
  // How much the held-out figures move between folds is how much a model change must gain
  // before it counts.
  struct Fold {
    double position = 0.0;  // calibration_shape_indices' position
    std::vector<std::string> calibration_ids;
    SelectionSummary held_out;
  };
  std::vector<Fold> folds;
};

// `max_fraction` of the described shapes (at most) are used for the fit. folds > 1 adds
// folds - 1 more fits on the samples at positions 0.5 + j / folds (mod 1).
GemmCalibrationRun run_gemm_calibration(const Hardware& hw, const GemmOracle& oracle, const GemmModelParams& start,
                                        double max_fraction, int folds = 1);

// No fit: the given parameters' selection on every shape of `oracle` (shapes no fit has
// seen, e.g. an oracle of other shapes than the one the parameters were fitted to).
GemmCalibrationRun judge_gemm_params(const Hardware& hw, const GemmOracle& oracle, const GemmModelParams& params);

// Mean, least and largest held-out figures over the folds.
struct FoldSpread {
  double geomean_mean = 0.0, geomean_min = 0.0, geomean_max = 0.0;
  double p5_mean = 0.0, p5_min = 0.0, p5_max = 0.0;
  double heuristic_geomean_mean = 0.0;
};
FoldSpread fold_spread(std::span<const GemmCalibrationRun::Fold> folds);

// Fills run.heuristic_lists from `lists`, a `gemm bench` record of the same GPU holding the
// heuristic's list per shape (its own timings are not used: times come from `oracle`).
void compare_heuristic_lists(GemmCalibrationRun& run, const GemmOracle& oracle, const GemmOracle& lists,
                             const std::string& lists_path);

// The results record (the common results-file fields plus the statistics above).
std::string gemm_calibration_json(const GemmCalibrationRun& run, const GemmOracle& oracle, const std::string& oracle_path,
                                  const std::string& command, const std::string& commit, const std::string& date);

}  // namespace hetrec::gemm_perf::gemm_perf
