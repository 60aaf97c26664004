#include "plan/calibration.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace hetrec::inline plan {
namespace {

constexpr std::size_t kN = kStepFactorCount;
using Vec = std::array<double, kN>;
using Mat = std::array<Vec, kN>;

// Step of the numerical derivative in log space.
constexpr double kLogStep = 1e-6;
// Levenberg-Marquardt damping: start, growth on a rejected step, shrink on an accepted
// one, and the relative cost change below which the fit stops.
constexpr double kInitialDamping = 1e-3;
constexpr double kDampingUp = 4.0;
constexpr double kDampingDown = 3.0;
constexpr double kConvergence = 1e-12;

struct Observation {
  std::size_t measurement;
  bool total;             // the step total, else one phase
  StepPhase phase;
  double measured_ms;
  double weight = 1.0;    // multiplies the log residual
};

StepModelParams with_logs(const StepModelParams& base, const Vec& logs) {
  StepModelParams p = base;
  for (std::size_t i = 0; i < kN; ++i) p.factors[i] = std::exp(logs[i]);
  return p;
}

double observed(const StepPrediction& p, const Observation& o) { return o.total ? p.step_ms : p.phase(o.phase); }

std::vector<Observation> observations(const std::vector<StepMeasurement>& ms, bool use_phases) {
  std::vector<Observation> obs;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const StepMeasurement& m = ms[i];
    if (!(m.step_ms > 0.0))
      throw ConfigError("calibration: measurement '" + m.label + "' has step time " + std::to_string(m.step_ms) +
                        " ms, expected > 0");
    obs.push_back({i, true, StepPhase::overhead, m.step_ms});
    if (!use_phases || m.phase_ms.empty()) continue;
    // A profiled step's phases weigh together as much as its total (squared weights sum
    // to 1): the step is what the planner ranks recipes by, the phases say how it splits,
    // and a profile of 11 phases must not outvote the unprofiled steps 11 to 1.
    const double phase_weight = 1.0 / std::sqrt(double(m.phase_ms.size()));
    for (const auto& [phase, ms_value] : m.phase_ms) {
      if (!(ms_value > 0.0))
        throw ConfigError("calibration: measurement '" + m.label + "' phase " + std::string(step_phase_name(phase)) +
                          " = " + std::to_string(ms_value) + " ms, expected > 0");
      obs.push_back({i, false, phase, ms_value, phase_weight});
    }
  }
  return obs;
}

// Residuals: log(predicted / measured) per observation, then the prior's.
std::vector<double> residuals(const std::vector<StepMeasurement>& ms, const std::vector<Observation>& obs,
                              const StepModelParams& base, const Vec& logs, const Vec& start, double prior_weight) {
  const StepModelParams p = with_logs(base, logs);
  std::vector<StepPrediction> preds;
  preds.reserve(ms.size());
  for (const StepMeasurement& m : ms) preds.push_back(predict_step(m.work, p));
  std::vector<double> r;
  r.reserve(obs.size() + kN);
  for (const Observation& o : obs) {
    const double v = observed(preds[o.measurement], o);
    // A phase the model gives no work at all: a fixed large residual the fit cannot change.
    r.push_back(o.weight * (v > 0.0 ? std::log(v / o.measured_ms) : std::log(1e-9 / o.measured_ms)));
  }
  const double w = std::sqrt(prior_weight);
  for (std::size_t i = 0; i < kN; ++i) r.push_back(w * (logs[i] - start[i]));
  return r;
}

double cost(const std::vector<double>& r) {
  double c = 0.0;
  for (double v : r) c += v * v;
  return c;
}

// Solves a x = b by Gaussian elimination with partial pivoting; false when singular.
bool solve(Mat a, Vec b, Vec& x) {
  for (std::size_t c = 0; c < kN; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < kN; ++r)
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    if (std::abs(a[pivot][c]) < 1e-300) return false;
    std::swap(a[c], a[pivot]);
    std::swap(b[c], b[pivot]);
    for (std::size_t r = c + 1; r < kN; ++r) {
      const double f = a[r][c] / a[c][c];
      for (std::size_t k = c; k < kN; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  for (std::size_t c = kN; c-- > 0;) {
    double s = b[c];
    for (std::size_t k = c + 1; k < kN; ++k) s -= a[c][k] * x[k];
    x[c] = s / a[c][c];
  }
  return true;
}

}  // namespace

std::vector<CalibrationResidual> step_model_residuals(const std::vector<StepMeasurement>& measurements,
                                                      const StepModelParams& params, bool use_phases) {
  std::vector<CalibrationResidual> out;
  const std::vector<Observation> obs = observations(measurements, use_phases);
  std::vector<StepPrediction> preds;
  for (const StepMeasurement& m : measurements) preds.push_back(predict_step(m.work, params));
  for (const Observation& o : obs)
    out.push_back({measurements[o.measurement].label, o.total ? "step" : std::string(step_phase_name(o.phase)),
                   o.measured_ms, observed(preds[o.measurement], o)});
  return out;
}

CalibrationFit calibrate_step_model(const std::vector<StepMeasurement>& measurements, const StepModelParams& start,
                                    const CalibrationOptions& options) {
  if (measurements.empty()) throw ConfigError("calibration: no measurements to fit the step model to");
  if (!(options.prior_weight > 0.0))
    throw ConfigError("calibration: the prior weight must be > 0, got " + std::to_string(options.prior_weight));
  for (std::size_t i = 0; i < kN; ++i)
    if (!(start.factors[i] > 0.0))
      throw ConfigError("calibration: starting factor " + std::string(step_factor_name(kAllStepFactors[i])) +
                        " must be > 0, got " + std::to_string(start.factors[i]));
  const std::vector<Observation> obs = observations(measurements, options.use_phases);
  Vec logs{}, origin{};
  for (std::size_t i = 0; i < kN; ++i) origin[i] = logs[i] = std::log(start.factors[i]);

  auto eval = [&](const Vec& l) { return residuals(measurements, obs, start, l, origin, options.prior_weight); };
  std::vector<double> r = eval(logs);
  double current = cost(r);
  double damping = kInitialDamping;
  int it = 0;
  bool converged = false;
  for (; it < options.max_iterations && !converged; ++it) {
    // Jacobian by central differences (the step model is cheap once its terms exist).
    std::vector<Vec> jac(r.size());
    for (std::size_t j = 0; j < kN; ++j) {
      Vec up = logs, down = logs;
      up[j] += kLogStep;
      down[j] -= kLogStep;
      const std::vector<double> ru = eval(up), rd = eval(down);
      for (std::size_t i = 0; i < r.size(); ++i) jac[i][j] = (ru[i] - rd[i]) / (2 * kLogStep);
    }
    Mat jtj{};
    Vec jtr{};
    for (std::size_t i = 0; i < r.size(); ++i)
      for (std::size_t a = 0; a < kN; ++a) {
        jtr[a] += jac[i][a] * r[i];
        for (std::size_t b = 0; b < kN; ++b) jtj[a][b] += jac[i][a] * jac[i][b];
      }
    bool accepted = false;
    while (!accepted && damping < 1e12) {
      Mat a = jtj;
      Vec neg{};
      for (std::size_t k = 0; k < kN; ++k) {
        a[k][k] += damping * std::max(jtj[k][k], 1e-12);
        neg[k] = -jtr[k];
      }
      Vec step{};
      if (!solve(a, neg, step)) {
        damping *= kDampingUp;
        continue;
      }
      Vec trial = logs;
      for (std::size_t k = 0; k < kN; ++k) trial[k] += step[k];
      const std::vector<double> rt = eval(trial);
      const double c = cost(rt);
      if (c < current) {
        const double change = (current - c) / std::max(current, 1e-300);
        logs = trial;
        r = rt;
        current = c;
        damping = std::max(damping / kDampingDown, 1e-12);
        accepted = true;
        converged = change < kConvergence;
      } else {
        damping *= kDampingUp;
      }
    }
    if (!accepted) break;
  }

  CalibrationFit fit;
  fit.params = with_logs(start, logs);
  fit.params.calibrated = true;
  fit.params.note = "fitted to " + std::to_string(measurements.size()) + " measured steps:";
  for (const StepMeasurement& m : measurements) fit.params.note += " " + m.label;
  fit.iterations = it;
  fit.residuals = step_model_residuals(measurements, fit.params, options.use_phases);
  // The residuals follow the observations one to one; the rms weighs them as the fit did.
  double sum = 0.0, weights = 0.0;
  for (std::size_t i = 0; i < fit.residuals.size(); ++i) {
    const CalibrationResidual& res = fit.residuals[i];
    const double l = std::log(res.predicted_ms / res.measured_ms);
    const double w2 = obs[i].weight * obs[i].weight;
    sum += w2 * l * l;
    weights += w2;
    if (res.quantity == "step") fit.max_step_error = std::max(fit.max_step_error, std::abs(res.relative_error()));
  }
  fit.rms_log_error = std::sqrt(sum / weights);
  return fit;
}

}  // namespace hetrec::plan::plan
