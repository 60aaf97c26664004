#pragma once
// The results of `hetrec gemm bench` (the cuBLASLt oracle): for every shape of the suite,
// the measured time of every valid cuBLASLt algorithm configuration, each also described
// as a GemmConfig so the analytical model can predict it. The file format is in
// docs/perf_model.md ("The cuBLASLt oracle"); load_gemm_oracle reads it back.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "perf/gemm_config.h"

namespace hetrec {

inline constexpr int kGemmOracleSchema = 1;

// One timed cuBLASLt configuration.
struct OracleCandidate {
  std::string key;  // "a<algo>.t<tile id>.s<stages id>.k<split>.r<reduction>.w<swizzle>.c<cluster id>.o<custom>"
  int algo_id = 0;
  std::string tile;  // "128x256" (cuBLASLt's tile enum), "auto" when undefined
  int tile_id = 0;
  std::string stages;  // "64x4" (K per stage x stages), "64xAUTO", "auto"
  int stages_id = 0;
  int split_k = 1;
  int reduction = 0;  // cuBLASLt reduction-scheme bit (0 without split-K)
  int swizzle = 0;    // cuBLASLt CTA swizzling 0/1
  std::string cluster;  // "2x1x1", "auto"
  int cluster_id = 0;
  int custom_option = 0;
  uint64_t workspace = 0;  // bytes the configuration needs
  double median_us = 0;
  double min_us = 0;
  GemmConfig config;  // the configuration in the model's terms
};

struct OracleRejected {
  std::string key;
  std::string reason;    // e.g. "mismatch", "launch failed"
  double max_error = 0;  // relative max error against the heuristic's output (mismatch)
};

struct OracleShape {
  std::string id;
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  std::string precision, epilogue, d_type;
  std::string skipped;  // why the shape was not timed (empty when it was); then nothing below is set
  std::string heuristic_key;              // cuBLASLt's heuristic top-1
  std::optional<std::size_t> heuristic_index;  // its place in `candidates`, when enumerated
  double heuristic_median_us = 0, heuristic_min_us = 0;
  std::vector<OracleCandidate> candidates;
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

}  // namespace hetrec
