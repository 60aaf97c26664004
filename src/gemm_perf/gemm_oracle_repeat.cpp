#include "gemm_perf/gemm_oracle_repeat.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "core/error.h"
#include "gemm_perf/gemm_calibration.h"

namespace hetrec::inline gemm_perf {

namespace {

ReproducedChoices summarise(const std::vector<double>& ratios) {
  return ReproducedChoices{ratios.size(), geomean(ratios), percentile(ratios, 0.05)};
}

}  // namespace

OracleReproducibility oracle_reproducibility(const GemmOracle& first, const GemmOracle& repeat,
                                             const std::string& repeat_path) {
  if (first.gpu != repeat.gpu || first.cublaslt_version != repeat.cublaslt_version)
    throw ConfigError(repeat_path + ": a repeat on " + repeat.gpu + " (cuBLASLt " + repeat.cublaslt_version +
                      ") of an oracle on " + first.gpu + " (cuBLASLt " + first.cublaslt_version + ")");
  std::map<std::string, const OracleShape*> repeated;
  for (const OracleShape& s : repeat.shapes)
    if (s.skipped.empty() && !s.candidates.empty()) repeated[s.id] = &s;
  OracleReproducibility r;
  r.repeat = repeat_path;
  std::vector<double> all, short_kernels, longer_kernels, abs_log;
  for (const OracleShape& s : first.shapes) {
    if (!s.skipped.empty() || s.candidates.empty()) continue;
    const auto it = repeated.find(s.id);
    if (it == repeated.end()) continue;
    const OracleShape& again = *it->second;
    std::map<std::string, double> repeat_us;
    double repeat_best = again.heuristic_median_us;
    for (const OracleCandidate& c : again.candidates) {
      repeat_us[c.key] = c.median_us;
      repeat_best = std::min(repeat_best, c.median_us);
    }
    double chosen_first = std::numeric_limits<double>::infinity(), chosen_repeat = 0.0;
    for (const OracleCandidate& c : s.candidates) {
      const auto t = repeat_us.find(c.key);
      if (t == repeat_us.end()) continue;
      abs_log.push_back(std::abs(std::log(t->second / c.median_us)));
      if (c.median_us < chosen_first) chosen_first = c.median_us, chosen_repeat = t->second;
    }
    if (!(chosen_repeat > 0.0)) continue;
    const double ratio = std::min(1.0, repeat_best / chosen_repeat);
    all.push_back(ratio);
    (repeat_best < kShortKernelUs ? short_kernels : longer_kernels).push_back(ratio);
  }
  if (all.empty()) throw ConfigError(repeat_path + ": shares no timed shape and configuration with the oracle");
  r.all = summarise(all);
  r.short_kernels = summarise(short_kernels);
  r.longer_kernels = summarise(longer_kernels);
  r.configurations = abs_log.size();
  r.median_abs_log_ratio = percentile(abs_log, 0.5);
  r.p90_abs_log_ratio = percentile(abs_log, 0.9);
  return r;
}

}  // namespace hetrec::gemm_perf::gemm_perf
