#pragma once
// Calibration of the step model: the efficiency factors (StepModelParams) fitted to
// measured steps by least squares on log(predicted / measured), so that a 10% error
// weighs the same on a 0.1 ms phase as on a 50 ms step. Each measured phase and each
// measured step total is one observation. A weak prior pulls every factor towards its
// starting value, which keeps factors that the measurements do not constrain (e.g. host
// tables when no measurement has any) where they were.
#include <map>
#include <string>
#include <vector>

#include "plan/step_model.h"
#include "plan/step_model_params.h"

namespace hetrec::inline plan {

struct StepMeasurement {
  std::string label;  // where it comes from, e.g. the results file
  StepWork work;      // step_work of the measured config and recipe on the measured GPU
  double step_ms = 0.0;
  std::map<StepPhase, double> phase_ms;  // measured phases, when profiled (may be empty)
};

// Weight of the prior per factor, against observations of weight 1: moving a factor by
// a factor e (one unit of log) costs as much as a 10% error on one observation.
inline constexpr double kCalibrationPriorWeight = 0.01;
inline constexpr int kCalibrationMaxIterations = 200;

struct CalibrationOptions {
  double prior_weight = kCalibrationPriorWeight;
  int max_iterations = kCalibrationMaxIterations;
  bool use_phases = true;  // false: fit the step totals only
};

struct CalibrationResidual {
  std::string label;
  std::string quantity;  // "step" or a phase name
  double measured_ms = 0.0;
  double predicted_ms = 0.0;
  double relative_error() const { return predicted_ms / measured_ms - 1.0; }
};

struct CalibrationFit {
  StepModelParams params;  // calibrated = true, note names the measurements
  std::vector<CalibrationResidual> residuals;  // after the fit, one per observation
  // Root mean square of log(predicted / measured), weighted as the fit weighs them (a
  // profiled step's phases together as much as its total).
  double rms_log_error = 0.0;
  double max_step_error = 0.0;  // largest |predicted / measured - 1| over the step totals
  int iterations = 0;
};

// Throws ConfigError when there is nothing to fit (no measurement, a non-positive time).
CalibrationFit calibrate_step_model(const std::vector<StepMeasurement>& measurements, const StepModelParams& start,
                                    const CalibrationOptions& options = {});

// Residuals of `params` on the measurements without fitting (for replay checks).
std::vector<CalibrationResidual> step_model_residuals(const std::vector<StepMeasurement>& measurements,
                                                      const StepModelParams& params, bool use_phases = true);

}  // namespace hetrec::plan::plan
