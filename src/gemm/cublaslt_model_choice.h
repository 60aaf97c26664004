#pragma once
// The engine's GEMM selection by the analytical model (gemm_perf/): every cuBLASLt algorithm
// configuration that runs a problem (the enumeration of gemm/cublaslt_algos.h, plus the
// library heuristic's first kHeuristicConfigs choices, kept as the structs it returned) is
// described in the model's terms and predicted; without a ranker the one predicted fastest
// is run. With the learned ranker of this GPU (ModelSelection::ranker), its router chooses:
// the ranker's best-scored candidate where the model predicts the heuristic's top-1 short
// (under the ranker's short_kernel_us), the heuristic's top-1 as returned elsewhere; its
// candidates are the oracle's (a listed configuration both rebuilt and as returned). No
// kernel is timed here (the timed shortlist is the caller's: gemm/cublaslt_gemm.h). CUDA only (hipBLASLt has no per-configuration enumeration).
//
// Left out before the prediction: configurations that need more workspace than the Gemm
// holds, that need more pointer alignment than the operands have (the algorithm's
// MIN_ALIGNMENT capabilities), and, for a 16-bit D, split-K configurations whose partial
// sums are added in D's type (as the heuristic path leaves them out, gemm/cublaslt_gemm.h).
#include <cstddef>
#include <optional>
#include <vector>

#include "gemm/cublaslt_algos.h"
#include "gemm/cublaslt_problem.h"
#include "hw/hardware.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_problem.h"
#include "gemm_perf/gemm_ranker.h"

namespace hetrec::inline gemm::cublaslt {

// What the learned rankers are validated by on this device (gemm_perf/gemm_ranker.h): the
// GPU's name, the driver and cuBLASLt's version, as `hetrec gemm bench` records them.
GemmRankerValidators local_ranker_validators(int device_index);

// simt_families filled from the library's id list for fp32 compute and operands.
ModelSelection make_model_selection(cublasLtHandle_t handle, Hardware hw, GemmModelParams params);

// The problem in the performance model's terms (the engine's row-major frame). Epilogues the
// model has no term for are priced as the nearest it has: the ReLU-mask and bias-gradient
// epilogues as bias + ReLU, a weight GEMM's bias gradient as a bias.
GemmProblem model_problem(const Problem& problem);

// A configuration of the timed shortlist (ModelSelection::timed_shortlist), as ModelChoice
// describes its pick.
struct ShortlistEntry {
  EnumeratedAlgo algo;
  GemmConfig config;
  double predicted_us = 0.0;
  int list_rank = -1;
};

struct ModelChoice {
  EnumeratedAlgo algo;
  GemmConfig config;  // its description in the model's terms
  double predicted_us = 0.0;
  std::size_t offered = 0;    // configurations that passed the workspace, alignment and split-K filters
  std::size_t predicted = 0;  // of them, ones the model could describe and run
  // Its place in the heuristic's returned list when it runs as the struct the library
  // returned (-1: not listed, or a struct rebuilt from a listed configuration's attributes).
  int list_rank = -1;
  bool learned = false;   // the ranker's pick (else the model's fastest, or the router kept the heuristic's)
  // With a ranker and ModelSelection::timed_shortlist = k > 0: the ranker's k best-scored
  // configurations and the heuristic's top-1 (gemm_perf/gemm_ranker.h, ranker_shortlist),
  // for the caller to time once and run the fastest; empty otherwise.
  std::vector<ShortlistEntry> shortlist;
};

// Whether the engine may run `algo` for the problem: the operands' alignment meets the
// algorithm's minimum, and a 16-bit D does not get split-K partials added in its own type.
bool algo_allowed(const EnumeratedAlgo& algo, const Problem& problem, const Alignment& alignment);

// The configuration predicted fastest (or the router's pick), or nullopt when the model can
// describe none of the library's configurations for the problem (or, with a ranker, the
// router keeps the heuristic's top-1 and the model cannot describe it: the caller's
// heuristic path then runs that same top-1).
std::optional<ModelChoice> choose_algo_by_model(cublasLtHandle_t handle, const Problem& problem,
                                                const MatmulDescriptors& desc, std::size_t workspace_bytes,
                                                const Alignment& alignment, const ModelSelection& selection);

}  // namespace hetrec::gemm::cublaslt
