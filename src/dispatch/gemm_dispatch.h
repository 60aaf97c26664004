#pragma once
// One GEMM dispatch: a GEMM as the engine's layers issue it (row-major, with its fused
// epilogue: gemm/cublaslt_gemm.h's language) goes in; the runner that will run it and its
// predicted time come out. The planner's step model prices every dense GEMM through it, and
// the GPU MLP and cross net issue the same requests (the layer lists below), so a GEMM is
// one problem from the layer to the price, not four conversions.
//
// Runners: the library (cuBLASLt/hipBLASLt) under the analytical model's choice among the
// GPU's candidate configurations (gemm_perf/gemm_selector.h), and, where one applies and
// `small_gemms` is on, our small-GEMM kernels (tune/small_gemm_selection.h), compared on
// predicted time with one launch overhead per kernel launched.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "gemm_perf/gemm_problem.h"
#include "gemm_perf/gemm_selector.h"
#include "tune/small_gemm_selection.h"

namespace hetrec::inline dispatch {

// D (m x n) = op(A) op(B) [+ C] with the fused epilogue. Operands are fp32 or 16-bit copies
// (bf16, fp16), packed as the layers keep them (a layer of width 479 has rows 479 values
// apart: gemm_request_problem gives the problem their alignment); D is fp32 or the
// operands' 16-bit type.
struct GemmRequest {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  GemmEpilogue epilogue = GemmEpilogue::none;
  bool accumulate = false;  // D += (cuBLASLt's beta = 1)
  DType operands = DType::f32;
  DType output = DType::f32;
  bool allow_tf32 = false;  // fp32 operands may run on the TF32 pipe
};

// The request in the performance model's terms (the one conversion).
GemmProblem gemm_request_problem(const GemmRequest& request);

enum class GemmRunner { library, small_gemm };
std::string_view gemm_runner_name(GemmRunner r);

struct GemmDispatchChoice {
  GemmRunner runner = GemmRunner::library;
  GemmProblem problem;
  GemmConfig blas_config;                  // the BLAS (cuBLASLt) configuration the model chose
  std::optional<tune::SmallGemmPick> small;   // set when runner is small_gemm
  double predicted_us = 0.0;                  // including its launches
  double launch_us = 0.0;                     // the launch overheads in predicted_us
  int launches = 1;
};

class GemmDispatch {
 public:
  // `selector` must outlive the dispatch.
  explicit GemmDispatch(const GemmSelector& selector, bool small_gemms = false);
  // Throws ConfigError when no runner can run the request.
  GemmDispatchChoice choose(const GemmRequest& request) const;
  const Hardware& hardware() const { return selector_.hardware(); }

 private:
  const GemmSelector& selector_;
  bool small_gemms_;
};

// One GEMM of a layer, named as the step's breakdown lists it ("forward", "dU", ...).
struct LayerGemm {
  std::string kind;
  GemmRequest request;
};

// The GEMMs GpuCrossNet issues for one cross layer: low rank (rank > 0: V then U) or full.
// `half`: the layer computes in the 16-bit type `sixteen` (its outputs 16-bit too, but for
// the weight gradients and the bottom layer's input gradient, accumulated into fp32).
std::vector<LayerGemm> cross_layer_forward_gemms(int64_t batch, int64_t width, int64_t rank, bool half, DType sixteen,
                                                 bool allow_tf32);
std::vector<LayerGemm> cross_layer_backward_gemms(int64_t batch, int64_t width, int64_t rank, bool half,
                                                  DType sixteen, bool allow_tf32, bool bottom);

}  // namespace hetrec::dispatch::dispatch
