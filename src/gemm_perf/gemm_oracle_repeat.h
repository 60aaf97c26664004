#pragma once
// How far a repeat of the oracle reproduces the first run's choices: the ceiling of any
// selector judged against one run's measurements. For every shape timed in both runs, the
// configuration fastest in the first run (among those the repeat timed too) is looked up
// in the repeat and compared with the repeat's own fastest time (oracle / selected, as
// the selection statistics). A perfect measurement would give 1; launch-to-launch and
// run-to-run variation of short kernels gives less.
#include <cstddef>
#include <string>

#include "gemm_perf/gemm_oracle.h"

namespace hetrec::inline gemm_perf {

// Shapes whose repeat oracle is below this time are counted apart: at a few microseconds
// a kernel's time is mostly its launch and start-up, and run-to-run variation is a large
// share of it (seen on the H200 records of 2026-11-30).
inline constexpr double kShortKernelUs = 10.0;

struct ReproducedChoices {
  std::size_t shapes = 0;
  double geomean = 0.0, p5 = 0.0;  // repeat oracle / repeat time of the first run's choice
};

struct OracleReproducibility {
  std::string repeat;  // the repeat record's path
  ReproducedChoices all, short_kernels, longer_kernels;  // split at kShortKernelUs
  // |log(repeat / first)| of every configuration timed in both runs.
  std::size_t configurations = 0;
  double median_abs_log_ratio = 0.0, p90_abs_log_ratio = 0.0;
};

// Throws ConfigError when the records come from different GPUs or cuBLASLt versions, or
// share no timed shape.
OracleReproducibility oracle_reproducibility(const GemmOracle& first, const GemmOracle& repeat,
                                             const std::string& repeat_path);

}  // namespace hetrec::gemm_perf::gemm_perf
