// CUDA only, as the enumeration it ranks (gemm/cublaslt_algos.h).
#if defined(HETREC_WITH_CUDA)
#include "gemm/cublaslt_model_choice.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "core/error.h"
#include "gemm/device_validators.h"
#include "gemm_perf/gemm_model.h"
#include "gemm_perf/gemm_oracle.h"
#include "gemm_perf/gemm_oracle_measurements.h"

namespace hetrec::inline gemm::cublaslt {

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

using Described = std::vector<std::optional<DescribedLibraryConfig>>;

// The keys of the heuristic's returned list, in its order.
std::vector<std::string> listed_keys_of(const std::vector<cublasLtMatmulAlgo_t>& listed) {
  std::vector<std::string> keys;
  for (const cublasLtMatmulAlgo_t& a : listed) keys.push_back(algo_key(read_algo_config(a)));
  return keys;
}

// A configuration's place in the heuristic's list (-1: not listed). A listed one is in the
// offered configurations as the struct the heuristic returned (add_heuristic_configs with
// keep_returned), which the selections file must find again in the list.
int list_rank_of(const std::string& key, const std::vector<std::string>& listed_keys) {
  for (std::size_t r = 0; r < listed_keys.size(); ++r)
    if (listed_keys[r] == key) return static_cast<int>(r);
  return -1;
}

// A configuration the router may choose, as offered: an enumerated (rebuilt) one, one of the
// heuristic's listed structs the enumeration lacked (added by add_heuristic_configs, so
// already run as returned), or a copy of a listed struct as the library returned it beside
// its rebuilt twin (`returned_copy`): the oracle times both, and a rebuilt struct may run
// another kernel than the returned one (gemm_perf/gemm_ranker_features.h, `returned`).
struct Offered {
  EnumeratedAlgo algo;
  bool returned_copy = false;
  bool run_as_returned = false;  // the selections file records it as "<key>@returned"
};

// The router's pick among the described candidates. nullopt: it keeps the heuristic's
// top-1, which the model cannot describe (the caller's heuristic path runs it).
std::optional<ModelChoice> route_by_ranker(const ModelSelection& s, const GemmProblem& library_problem,
                                           const std::vector<Offered>& offered, const Described& described,
                                           const std::vector<std::string>& listed_keys) {
  std::vector<RankerCandidate> candidates;
  std::vector<std::size_t> offered_of;
  int heuristic = -1;
  for (std::size_t i = 0; i < offered.size(); ++i) {
    if (!described[i]) continue;
    RankerCandidate c;
    c.key = algo_key(offered[i].algo.config);
    c.config = described[i]->config;
    c.alternatives = described[i]->alternatives;
    c.transposed = described[i]->transposed;
    if (const int rank = list_rank_of(c.key, listed_keys); rank >= 0) c.list_rank = rank;
    c.returned = offered[i].returned_copy;
    // The heuristic's top-1 is the struct it returned: its copy where it has a rebuilt twin.
    if (c.list_rank == 0 && (heuristic < 0 || offered[i].run_as_returned))
      heuristic = static_cast<int>(candidates.size());
    candidates.push_back(std::move(c));
    offered_of.push_back(i);
  }
  if (candidates.empty()) return std::nullopt;
  const RankerPick pick = select_gemm_by_ranker(*s.ranker, s.hw, s.params, library_problem, candidates, heuristic);
  const int chosen = pick.candidate >= 0 ? pick.candidate : heuristic;
  if (chosen < 0) return std::nullopt;
  // Candidate i as the engine runs it, with the model's prediction.
  const auto entry = [&](int i) {
    const RankerCandidate& c = candidates[static_cast<std::size_t>(i)];
    const Offered& o = offered[offered_of[static_cast<std::size_t>(i)]];
    const double t = predict_best_of(s.hw, s.params, c.transposed ? transposed_product(library_problem) : library_problem,
                                     c.config, c.alternatives);
    return ShortlistEntry{o.algo, c.config, std::isnan(t) ? 0.0 : t,
                          o.run_as_returned && c.list_rank < kNotListed ? c.list_rank : -1};
  };
  const ShortlistEntry e = entry(chosen);
  ModelChoice out;
  out.algo = e.algo;
  out.config = e.config;
  out.predicted_us = e.predicted_us;
  out.list_rank = e.list_rank;
  out.learned = pick.learned;
  if (s.timed_shortlist > 0)
    for (const int i : ranker_shortlist(*s.ranker, gemm_ranker_rows(s.hw, s.params, library_problem, candidates),
                                        heuristic, s.timed_shortlist)) {
      // A listed struct and its rebuilt twin can be the same bytes: one launch of them is
      // timed, kept in the form the selections file finds again in the heuristic's list.
      ShortlistEntry add = entry(i);
      const auto twin = std::find_if(out.shortlist.begin(), out.shortlist.end(),
                                     [&](const ShortlistEntry& have) { return same_algo(have.algo.algo, add.algo.algo); });
      if (twin == out.shortlist.end())
        out.shortlist.push_back(std::move(add));
      else if (twin->list_rank < 0 && add.list_rank >= 0)
        *twin = std::move(add);
    }
  // The pick in the form its shortlist keeps it.
  for (const ShortlistEntry& have : out.shortlist)
    if (same_algo(have.algo.algo, out.algo.algo)) out.list_rank = have.list_rank;
  return out;
}

}  // namespace

GemmRankerValidators local_ranker_validators(int device_index) {
  const ProbeValidators v = local_probe_validators(device_index);
  return {v.gpu, v.driver, std::to_string(cublasLtGetVersion()), ""};
}

ModelSelection make_model_selection(cublasLtHandle_t handle, Hardware hw, GemmModelParams params) {
  return ModelSelection{std::move(hw), std::move(params), list_algo_ids(handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F),
                        nullptr};
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
    case Epilogue::drelu_bgrad:
    case Epilogue::drelu: g.epilogue = GemmEpilogue::bias_relu; break;
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
  const std::vector<cublasLtMatmulAlgo_t> listed = heuristic_algos(handle, desc.desc, desc.a, desc.b, desc.d,
                                                                    workspace_bytes, alignment, sixteen_bit_d,
                                                                    kHeuristicConfigs);
  const GemmProblem engine_problem = model_problem(problem);
  validate_gemm_problem(engine_problem);
  const GemmProblem library_problem = library_frame(engine_problem);
  const std::vector<std::string> listed_keys = listed_keys_of(listed);
  const auto describe = [&](const std::vector<EnumeratedAlgo>& algos) {
    std::vector<OracleCandidate> candidates;
    for (const EnumeratedAlgo& e : algos) candidates.push_back(as_candidate(e.config));
    return describe_library_configs(selection.hw, library_problem, candidates, selection.simt_families);
  };
  if (selection.ranker) {
    // The ranker's candidates are the oracle's: the enumeration, the listed structs it lacks,
    // and a copy of every listed struct as returned.
    const std::size_t enumerated = enumeration.valid.size();
    add_heuristic_configs(handle, desc, workspace_bytes, listed, enumeration, false);
    std::vector<Offered> offered;
    for (std::size_t i = 0; i < enumeration.valid.size(); ++i)
      if (algo_allowed(enumeration.valid[i], problem, alignment))
        offered.push_back({enumeration.valid[i], false, i >= enumerated});
    for (const cublasLtMatmulAlgo_t& a : listed) {
      const auto i = find_config(enumeration.valid, read_algo_config(a));
      if (!i) continue;  // refused by check_algo
      // One the enumeration lacked is already the returned struct, checked when added.
      const auto checked = *i >= enumerated ? std::optional(enumeration.valid[*i]) : check_algo(handle, desc, a, workspace_bytes);
      if (checked && algo_allowed(*checked, problem, alignment)) offered.push_back({*checked, true, true});
    }
    std::vector<EnumeratedAlgo> algos;
    for (const Offered& o : offered) algos.push_back(o.algo);
    const Described described = describe(algos);
    std::optional<ModelChoice> routed = route_by_ranker(selection, library_problem, offered, described, listed_keys);
    if (routed) {
      routed->offered = offered.size();
      routed->predicted = static_cast<std::size_t>(std::count_if(described.begin(), described.end(),
                                                                 [](const auto& d) { return d.has_value(); }));
    }
    return routed;
  }
  add_heuristic_configs(handle, desc, workspace_bytes, listed, enumeration, true);
  std::vector<EnumeratedAlgo> offered;
  for (const EnumeratedAlgo& e : enumeration.valid)
    if (algo_allowed(e, problem, alignment)) offered.push_back(e);
  const Described described = describe(offered);
  std::optional<ModelChoice> best;
  std::size_t predicted = 0;
  for (std::size_t i = 0; i < offered.size(); ++i) {
    if (!described[i]) continue;
    const double t = predict_best_of(selection.hw, selection.params,
                                     described[i]->transposed ? engine_problem : library_problem, described[i]->config,
                                     described[i]->alternatives);
    if (std::isnan(t)) continue;
    ++predicted;
    if (!best || t < best->predicted_us) {
      best = ModelChoice{};
      best->algo = offered[i];
      best->config = described[i]->config;
      best->predicted_us = t;
    }
  }
  if (best) {
    best->offered = offered.size();
    best->predicted = predicted;
    best->list_rank = list_rank_of(algo_key(best->algo.config), listed_keys);
  }
  return best;
}

}  // namespace hetrec::gemm::cublaslt
#endif
