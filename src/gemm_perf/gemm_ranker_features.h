#pragma once
// The features the learned GEMM ranker (gemm_perf/gemm_ranker.h) scores one candidate
// configuration of one GEMM by: the shape, the configuration as the library names it and as
// the model describes it, the analytical model's prediction and its roofline terms, and the
// configuration's rank in the library heuristic's returned list. One function computes them
// for training (`hetrec gemm features`, from an oracle) and at selection time, so the two
// cannot drift. docs/gemm_selection.md ("The learned ranker") lists them.
#include <array>
#include <string>
#include <vector>

#include "hw/hardware.h"
#include "gemm_perf/gemm_calibration.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_oracle.h"
#include "gemm_perf/gemm_problem.h"

namespace hetrec::inline gemm_perf {

inline constexpr const char* kGemmRankerFeatureNames[] = {
    "log2_m", "log2_n", "log2_k", "trans_a", "trans_b", "precision", "epilogue", "m_mod16", "n_mod16", "k_mod16",
    "log2_flops", "log2_min_bytes",
    // the library's identity of the configuration (oracle_candidate_key)
    "algo_id", "tile_id", "stages_id", "split_k", "reduction", "swizzle", "cluster_id", "custom_option",
    // the model's description
    "tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n", "transposed", "alternatives",
    // the model's prediction and its terms (fractions of the predicted time)
    "log2_predicted_us", "log2_predicted_over_best", "predicted_rank", "waves", "padding_efficiency", "limiter",
    "math_share", "feed_share", "l2_share", "latency_share", "dram_share", "overhead_share", "reduction_share",
    // the library heuristic's list
    "list_rank", "returned"};
inline constexpr std::size_t kGemmRankerFeatures = std::size(kGemmRankerFeatureNames);
using GemmRankerRow = std::array<float, kGemmRankerFeatures>;

// A rank for configurations the heuristic's list does not hold.
inline constexpr int kNotListed = 64;

// One candidate of one problem, as both the oracle conversion and the engine see it.
struct RankerCandidate {
  std::string key;  // oracle_candidate_key of the library's ids
  GemmConfig config;
  std::vector<GemmConfig> alternatives;
  bool transposed = false;
  int list_rank = kNotListed;  // its place in the heuristic's returned list
  bool returned = false;       // it is the struct the heuristic returned, not a rebuilt one
};

// The ranker scores a shortlist: the candidates the analytical model predicts among the
// kRankerShortlist fastest, and every one in the heuristic's list. Predicting every candidate
// is cheap (microseconds each); the full features and the trees' scoring cost more, and the
// model's ranking beyond its first few dozen rarely holds the fastest kernel.
inline constexpr std::size_t kRankerShortlist = 24;

// The features of the shortlisted candidates of one problem (`problem` in the library's
// frame, as oracle_measurements and describe_library_configs give it). Candidates the model
// cannot predict get the largest predicted time of the others. Throws ConfigError when a key
// is malformed.
struct RankerRows {
  std::vector<std::size_t> candidate;  // the candidate of each row
  std::vector<GemmRankerRow> rows;
};
RankerRows gemm_ranker_rows(const Hardware& hw, const GemmModelParams& params, const GemmProblem& problem,
                            const std::vector<RankerCandidate>& candidates);

// One shape of an oracle ready for ranking: its candidates (the described enumerated ones,
// then the heuristic's returned structs), their measured times, and what the router needs.
struct RankerShape {
  std::string id, family;
  GemmProblem problem;  // library frame
  std::vector<RankerCandidate> candidates;
  std::vector<double> measured_us;  // per candidate
  double oracle_us = 0.0;           // least time measured on the shape by anything
  double heuristic_us = 0.0;        // the heuristic's top-1 as returned
  int heuristic_candidate = -1;     // the candidate that is the heuristic's top-1 (-1: none described)
};

// The oracle's shapes with at least one described candidate, in file order.
std::vector<RankerShape> ranker_shapes(const Hardware& hw, const GemmOracle& oracle);

// The CSV `hetrec gemm features` writes: shape, family, candidate, measured_us, oracle_us,
// heuristic_us, is_heuristic, then the features by name.
std::string gemm_ranker_csv(const Hardware& hw, const GemmModelParams& params, const std::vector<RankerShape>& shapes);

}  // namespace hetrec::gemm_perf::gemm_perf
