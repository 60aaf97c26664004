#pragma once
// The results of `hetrec gemm bench` (the cuBLASLt oracle): for every shape of the suite,
// the measured time of every valid cuBLASLt algorithm configuration, each also described
// as a GemmConfig so the analytical model can predict it. The file format is in
// docs/perf_model.md ("The cuBLASLt oracle"); load_gemm_oracle reads it back.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gemm_perf/gemm_config.h"

namespace hetrec::inline gemm_perf {

inline constexpr int kGemmOracleSchema = 1;

// One timed cuBLASLt configuration. In the file it is one row (an array) whose columns are
// kOracleCandidateColumns, in that order (docs/perf_model.md).
struct OracleCandidate {
  std::string key;  // oracle_candidate_key of the ids below
  int algo_id = 0;
  int tile_id = 0;    // cuBLASLt's tile enum value (0: undefined)
  int stages_id = 0;  // cuBLASLt's stages enum value (0: undefined)
  int split_k = 1;
  int reduction = 0;  // cuBLASLt reduction-scheme bit (0 without split-K)
  int swizzle = 0;    // cuBLASLt CTA swizzling 0/1
  int cluster_id = 0;  // cuBLASLt's cluster-shape enum value (0: automatic)
  int custom_option = 0;
  uint64_t workspace = 0;  // bytes the configuration needs
  double median_us = 0;
  double min_us = 0;
  double max_error = 0;  // relative max error against the heuristic's output
  GemmConfig config;     // the configuration in the model's terms
  // Its rank in the heuristic's returned list when it was timed as the struct the library
  // returned (OracleShape::returned); -1 for an enumerated configuration.
  int returned_rank = -1;
};

inline constexpr const char* kOracleCandidateColumns[] = {
    "algo_id",   "tile_id", "stages_id", "split_k", "reduction", "swizzle", "cluster_id",
    "custom_option", "workspace", "median_us", "min_us", "max_err",
    // the GemmConfig (tile, stages, cluster from the ids; swizzle in the model's terms)
    "tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n", "config_swizzle"};

// "a<algo>.t<tile>.s<stages>.k<split>.r<reduction>.w<swizzle>.c<cluster>.o<custom>"
std::string oracle_candidate_key(int algo_id, int tile_id, int stages_id, int split_k, int reduction, int swizzle,
                                 int cluster_id, int custom_option);

struct OracleRejected {
  std::string key;
  std::string reason;    // e.g. "mismatch", "launch failed"
  double max_error = 0;  // relative max error against the heuristic's output (mismatch)
};

struct OracleShape {
  std::string id;
  // The layer family (the file's `family`; else the id's first two parts, "<model>.<layer>").
  std::string family;
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  std::string precision, epilogue, d_type;
  std::string skipped;  // why the shape was not timed (empty when it was); then nothing below is set
  std::string heuristic_key;                   // cuBLASLt's heuristic top-1
  std::optional<std::size_t> heuristic_index;  // its place in `candidates`, when enumerated and timed
  double heuristic_median_us = 0, heuristic_min_us = 0;
  // The heuristic's first choices in its order (its top-1 first), and the CPU time the query
  // for them took; empty and 0 in results written before the list was recorded.
  std::vector<std::string> heuristic_listed;
  double heuristic_list_query_us = 0;
  std::vector<OracleCandidate> candidates;
  // The heuristic's returned algorithms timed as returned, rank order (empty in records
  // written before they were timed).
  std::vector<OracleCandidate> returned;
  std::vector<OracleRejected> rejected;
};

struct GemmOracle {
  int schema = kGemmOracleSchema;
  std::string date, gpu, driver, cublaslt_version, cuda_runtime, commit, command;
  int launches = 0, warmup = 0;
  uint64_t rotation_bytes = 0;
  std::vector<OracleShape> shapes;
};

// Throws IoError when the file cannot be read and ConfigError naming the file and the
// JSON path of the first missing or mistyped field.
GemmOracle load_gemm_oracle(const std::string& path);
// The same from text already in memory (`where` names it in errors).
GemmOracle parse_gemm_oracle(const std::string& text, const std::string& where);

}  // namespace hetrec::gemm_perf::gemm_perf
