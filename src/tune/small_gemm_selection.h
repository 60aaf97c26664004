#pragma once
// The small-GEMM kernels (tunable/small_gemm/small_gemm_kernel.cuh) as candidates of the GEMM
// selection: for a GEMM with a dimension of at most 16 whose layout and types one of the
// kernels takes, the variant the small-GEMM model predicts fastest, priced on the same
// footing as the library's configurations (gemm_perf/gemm_model.h: one launch overhead per
// kernel). Choosing between the two is a comparison of predictions; nothing is timed.
//
// A GemmProblem (row-major frame, gemm_perf/gemm_problem.h) maps to a kind when
//   rows    N <= 16, A as stored (M x K), B either way: C = A op(B) (+ bias, ReLU);
//   outer   K <= 16, the same layouts;
//   reduce  A stored K x M and B stored K x N (C = A^T B over K batch rows, a weight
//           gradient) with M <= 16 (the narrow operand is A) or N <= 16 (it is B);
// and only with A and B of one type among fp32, bf16 and fp16, an fp32 C that is not
// accumulated into, one product (batch 1), no fp8 scaling, and no epilogue for reduce.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "hw/hardware.h"
#include "tunable/small_gemm/small_gemm_variant.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_problem.h"
#include "tunable/small_gemm/small_gemm_cost.h"

namespace hetrec::tune {

// The workloads (one per kind that applies; none when the kernels cannot run it).
std::vector<SmallGemmWorkload> small_gemm_workloads(const GemmProblem& problem);

// The GemmProblem a workload runs (the inverse of small_gemm_workloads for its kind).
GemmProblem small_gemm_problem(const SmallGemmWorkload& workload);

// Kernel launches one call of the kind makes (the reduce kind's second pass is one more).
int small_gemm_launches(kernels::SmallGemmKind kind);

// Every variant of the kind's tuning space (small_gemm_space), built once.
const std::vector<kernels::SmallGemmVariant>& small_gemm_variants(kernels::SmallGemmKind kind);

struct SmallGemmPick {
  SmallGemmWorkload workload;
  kernels::SmallGemmVariant variant;
  double kernel_us = 0.0;     // small_gemm_predicted_us
  double predicted_us = 0.0;  // kernel_us plus a launch overhead per kernel launched
  std::size_t predicted = 0;  // variants that passed small_gemm_static_problem and were predicted
};

// Every variant of every applicable kind that passes the static rules, fastest predicted
// first (ties: more resident threads per unit, fewer issue slots, more bytes in flight per
// thread, then the space's order). `predicted` of each holds the
// list's length. The engine takes the first whose compiled kernel can launch (its
// registers allow the block), which only a compile tells.
std::vector<SmallGemmPick> rank_small_gemm(const Hardware& hw, const GemmProblem& problem,
                                           const GemmModelParams& params);

// The first of rank_small_gemm, or nullopt when no kind applies or no variant passes.
std::optional<SmallGemmPick> pick_small_gemm(const Hardware& hw, const GemmProblem& problem,
                                             const GemmModelParams& params);

// A given variant (a tuned winner) priced the same way, for its workload.
SmallGemmPick price_small_gemm(const Hardware& hw, const SmallGemmWorkload& workload,
                               const kernels::SmallGemmVariant& variant, const GemmModelParams& params);

}  // namespace hetrec::tune

namespace hetrec::tune {

// The lines `hetrec gemm select` adds for the small-GEMM candidate: the kernel and
// variant, its predicted time against `library_us` (the library configuration the model
// chose; <= 0 when none can run the problem) and which of the two is selected. Empty
// when no small-GEMM kernel applies.
std::string small_gemm_select_report(const Hardware& hw, const GemmProblem& problem, const GemmModelParams& params,
                                     double library_us);

}  // namespace hetrec::tune
