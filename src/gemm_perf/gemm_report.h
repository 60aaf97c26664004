#pragma once
// The text `hetrec gemm select` prints: the chosen configuration for a GEMM on a GPU, its
// predicted time, TFLOP/s and breakdown, and the best alternatives.
#include <cstddef>
#include <string>

#include "hw/hardware.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_problem.h"

namespace hetrec::inline gemm_perf {

// Alternatives listed: the best pipeline depth and launch order of each of the
// next-fastest kernels.
inline constexpr std::size_t kReportAlternatives = 5;

std::string gemm_select_report(const Hardware& hw, const GemmProblem& problem,
                               const GemmModelParams& params = GemmModelParams{});

}  // namespace hetrec::gemm_perf::gemm_perf
