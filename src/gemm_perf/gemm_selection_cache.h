#pragma once
// Remembered GEMM selections, keyed by everything that makes two GEMMs the same problem
// (shape, dtypes, layouts, epilogue, operand alignment). The file starts with validator lines (GPU name,
// driver version, library version, model-parameter fingerprint); a file written under
// other validators is discarded on load, so a stale selection is never reused.
//
// File format (text, one record per line):
//   hetrec-gemm-selection-cache 1
//   validator <name>=<value>
//   entry <problem fields>[ variant=<n>] | <config fields> | predicted_us=<time>[ library=<key>]
//   (the problem fields end with align_a=<n> align_b=<n> where an operand's rows are aligned
//   to fewer than 16 bytes)
//   end entries=<count> crc32c=<hex of every line before this one>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/log.h"
#include "gemm_perf/gemm_config.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_problem.h"
#include "gemm_perf/gemm_selector.h"

namespace hetrec::inline gemm_perf {

struct GemmCacheValidators {
  std::vector<std::pair<std::string, std::string>> items;  // name -> value, in file order
  bool operator==(const GemmCacheValidators&) const = default;
};

// gpu / driver / library as reported by the runtime, plus "model_params" = the params'
// fingerprint. Values must not contain line breaks (ConfigError).
GemmCacheValidators make_gemm_cache_validators(const std::string& gpu_name, const std::string& driver_version,
                                               const std::string& library_version,
                                               const GemmModelParams& params);

struct CachedGemmChoice {
  GemmConfig config;
  double predicted_us = 0.0;
  // The vendor library's own key of the chosen configuration (cuBLASLt: gemm/cublaslt_algo_ids.h
  // algo_key), when the choice is one of its kernels; empty for the model's own candidates.
  std::string vendor_config;
};

class GemmSelectionCache {
 public:
  explicit GemmSelectionCache(GemmCacheValidators validators);

  const GemmCacheValidators& validators() const { return validators_; }
  std::size_t size() const { return entries_.size(); }
  // `variant` tells apart problems the model sees alike but the library runs as different
  // operations (the engine: cuBLASLt's epilogue, whose backward forms the model prices as
  // their forward ones); 0 for none.
  std::optional<CachedGemmChoice> find(const GemmProblem& problem, int variant = 0) const;
  void insert(const GemmProblem& problem, const CachedGemmChoice& choice, int variant = 0);

  // Writes to `<path>.tmp` and renames it over `path`.
  void save(const std::string& path) const;
  // Reads `path` when it exists and was written under `current`; otherwise returns an
  // empty cache for `current`, logging why (validator mismatch: info; damaged file: warn).
  static GemmSelectionCache load(const std::string& path, const GemmCacheValidators& current,
                                 const Logger& log);

 private:
  struct Key {
    int64_t m, n, k, batch;
    uint8_t trans_a, trans_b, a_type, b_type, c_type, compute_type, allow_tf32, accumulate, epilogue,
        fp8_scaling, a_alignment, b_alignment;
    int variant;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };
  static Key key_of(const GemmProblem& p, int variant);

  GemmCacheValidators validators_;
  struct Entry {
    GemmProblem problem;
    int variant = 0;
    CachedGemmChoice choice;
  };
  std::unordered_map<Key, Entry, KeyHash> entries_;
};

// The cached choice for `problem`, or a fresh selection that is then cached.
CachedGemmChoice select_cached(const GemmSelector& selector, GemmSelectionCache& cache,
                               const GemmProblem& problem);

}  // namespace hetrec::gemm_perf::gemm_perf
