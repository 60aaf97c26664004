// CUDA only, as the enumeration it ranks (gemm/cublaslt_algos.h).
#if defined(HETREC_WITH_CUDA)
#include "gemm/cublaslt_model_choice.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/error.h"
#include "gemm_perf/gemm_model.h"
#include "gemm_perf/gemm_oracle.h"
#include "gemm_perf/gemm_oracle_measurements.h"

namespace hetrec::cublaslt {

namespace {

// A split-K configuration whose partials are added in the output type (a workspace in the
// output type, or in place in D).
bool adds_partials_in_output_type(const AlgoConfig& c) {
  return c.split_k > 1 && c.reduction != CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
}

OracleCandidate as_candidate(const AlgoConfig& c) {
  OracleCandidate o;
  o.key = algo_key(c);
  o.algo_id = c.algo_id;
  o.tile_id = c.tile_id;
  o.stages_id = c.stages_id;
  o.split_k = c.split_k;
  o.reduction = c.reduction;
  o.swizzle = c.swizzle;
  o.cluster_id = c.cluster_id;
  o.custom_option = c.custom_option;
  o.config = gemm_config_of(c);
  return o;
}

}  // namespace

ModelSelection make_model_selection(cublasLtHandle_t handle, Hardware hw, GemmModelParams params) {
  return ModelSelection{std::move(hw), std::move(params), list_algo_ids(handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F)};
}

GemmProblem model_problem(const Problem& p) {
  GemmProblem g;
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.trans_a = p.trans_a;
  g.trans_b = p.trans_b;
  g.a_type = g.b_type = operand_dtype(p.precision);
  g.c_type = p.d_type;
  g.allow_tf32 = p.precision == Precision::tf32;
  if (p.precision == Precision::fp8_e4m3) g.fp8_scaling = Fp8Scaling::per_tensor;
  switch (p.epilogue) {
    case Epilogue::none: g.epilogue = GemmEpilogue::none; break;
    case Epilogue::bias:
    case Epilogue::bgrad_a: g.epilogue = GemmEpilogue::bias; break;
    case Epilogue::relu_bias:
    case Epilogue::relu_aux_bias:
    case Epilogue::drelu_bgrad: g.epilogue = GemmEpilogue::bias_relu; break;
  }
  return g;
}

bool algo_allowed(const EnumeratedAlgo& algo, const Problem& problem, const Alignment& alignment) {
  if (problem.d_type != DType::f32 && adds_partials_in_output_type(algo.config)) return false;
  return alignment_allows(algo.algo, alignment);
}

std::optional<ModelChoice> choose_algo_by_model(cublasLtHandle_t handle, const Problem& problem,
                                                const MatmulDescriptors& desc, std::size_t workspace_bytes,
                                                const Alignment& alignment, const ModelSelection& selection) {
  AlgoEnumeration enumeration = enumerate_algos(handle, problem, desc, workspace_bytes);
  const bool sixteen_bit_d = problem.d_type != DType::f32;
  // The heuristic's own list too (it reaches beyond the enumeration's bounds), its
  // configurations run as the structs it returned.
  add_heuristic_configs(handle, desc, workspace_bytes,
                        heuristic_algos(handle, desc.desc, desc.a, desc.b, desc.d, workspace_bytes, alignment,
                                        sixteen_bit_d, kHeuristicConfigs),
                        enumeration, true);
  std::vector<EnumeratedAlgo> offered;
  std::vector<OracleCandidate> candidates;
  for (const EnumeratedAlgo& e : enumeration.valid) {
    if (!algo_allowed(e, problem, alignment)) continue;
    offered.push_back(e);
    candidates.push_back(as_candidate(e.config));
  }
  const GemmProblem engine_problem = model_problem(problem);
  validate_gemm_problem(engine_problem);
  const GemmProblem library_problem = library_frame(engine_problem);
  const auto described = describe_library_configs(selection.hw, library_problem, candidates, selection.simt_families);
  std::optional<ModelChoice> best;
  std::size_t predicted = 0;
  for (std::size_t i = 0; i < offered.size(); ++i) {
    if (!described[i]) continue;
    const double t = predict_best_of(selection.hw, selection.params,
                                     described[i]->transposed ? engine_problem : library_problem, described[i]->config,
                                     described[i]->alternatives);
    if (std::isnan(t)) continue;
    ++predicted;
    if (!best || t < best->predicted_us) best = ModelChoice{offered[i], described[i]->config, t, 0, 0};
  }
  if (best) {
    best->offered = offered.size();
    best->predicted = predicted;
  }
  return best;
}

}  // namespace hetrec::cublaslt
#endif
