#pragma once
// What `hetrec gemm select` prints for one GEMM: the analytical model's choice of a library
// configuration (gemm_perf/gemm_report.h) and, where a dimension is at most 16, how the
// small-GEMM kernels compete with it (tune/small_gemm_selection.h). The program and the
// Python module both print through here.
#include <cstdint>
#include <string>

#include "hw/hardware.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_problem.h"

namespace hetrec::tune {

// A GEMM as a user names it: types and epilogue as text.
struct GemmSelectRequest {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  std::string dtype = "bf16";  // A and B: fp32, bf16, fp16, fp8_e4m3
  std::string out_dtype;       // C; empty: fp32 for fp32 inputs, bf16 otherwise
  std::string epilogue = "none";
  bool trans_a = false, trans_b = false, tf32 = false;
};

// The problem of a request. ConfigError names the bad field as `key_prefix` + its name
// (`--dtype` for the program, `dtype` for the module) and what was expected.
GemmProblem gemm_problem_of(const GemmSelectRequest& request, const std::string& key_prefix);

// The report of `hetrec gemm select`.
std::string gemm_select_text(const Hardware& hw, const GemmProblem& problem, const GemmModelParams& params);

}  // namespace hetrec::tune
