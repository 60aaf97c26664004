#pragma once
// The oracle's results (perf/gemm_oracle.h) in the model's terms: each timed shape as a
// GemmProblem, each timed cuBLASLt configuration as a complete GemmConfig the model can
// predict, ready for the calibration fit and the selection statistics
// (perf/gemm_calibration.h).
//
// cuBLASLt exposes a configuration's tile (M x N), K per stage, stage count, cluster,
// split-K and swizzle, but not the matrix instruction or the warp layout; those are
// completed from the GPU's instruction list as the library's Hopper kernels use them
// (warpgroup instructions m64nNk*, one or two consumer warpgroups per CTA). A tile of
// "kernel's choice" (tile id 0, the library's non-enumerable kernels) or one the GPU's
// instructions cannot build (e.g. fewer than 64 rows on a warpgroup-only precision) has no
// description: it is left out of the candidates but still counts in the shape's best
// measured time, so that the selection statistics never flatter the model.
#include <cstddef>
#include <string>
#include <vector>

#include "hw/hardware.h"
#include "perf/gemm_calibration.h"
#include "perf/gemm_config.h"
#include "perf/gemm_oracle.h"
#include "perf/gemm_problem.h"

namespace hetrec {

// Throws ConfigError naming the shape when its precision, output type or epilogue is not
// one the model covers.
GemmProblem oracle_problem(const OracleShape& shape);

// The complete configuration of one timed candidate, or false (with the reason) when it
// cannot be described on this GPU.
bool oracle_model_config(const Hardware& hw, const GemmProblem& problem, const OracleCandidate& candidate,
                         GemmConfig& config, std::string& reason);

struct OracleConversion {
  std::vector<MeasuredShape> shapes;  // timed shapes with at least one describable candidate
  std::size_t skipped_shapes = 0;     // shapes the oracle did not time (its `skipped`)
  std::size_t undescribed_shapes = 0; // timed shapes with no describable candidate
  std::size_t candidates = 0;         // timed candidates seen
  std::size_t undescribed = 0;        // of them, left out
  std::size_t oracle_undescribed = 0; // shapes whose fastest kernel is an undescribed one
};

OracleConversion oracle_measurements(const Hardware& hw, const GemmOracle& oracle);

}  // namespace hetrec
