#pragma once
// `hetrec gemm bench`: the cuBLASLt oracle. For every shape of the suite (gemm_perf/gemm_suite.h)
// it enumerates cuBLASLt's algorithm configurations (gemm/cublaslt_algos.h), checks each
// one's output against the heuristic's, times it, and writes the results as JSON (format in
// docs/perf_model.md; gemm_perf/gemm_oracle.h reads it back). The heuristic's returned algorithms
// are timed as the structs it returns, each with its list rank (`heuristic.returned`), beside
// the enumerated configurations rebuilt from their attributes.
#include <string>
#include <vector>

namespace hetrec::inline gemm {

struct GemmBenchOptions {
  std::string suite = "all";  // "all", one model of the suite (gemm_perf/gemm_suite.h), or "corpus" (gemm_perf/gemm_corpus.h)
  std::vector<std::string> families;  // --suite corpus only: these families (empty: all)
  int shard_index = 0, shard_count = 1;  // every shard_count-th shape from shard_index (after the filter)
  std::string filter;   // ECMAScript regex matched (search) against shape ids; empty: the whole suite
  std::string out;      // results file (written atomically, also during the run)
  int launches = 25;    // timed launches per candidate (at least 20)
  int warmup = 5;       // untimed launches before them
  // 0: no cap. Candidates are timed in a spread order (the heuristic's equal first, then
  // i * stride mod n), so any prefix samples the whole enumeration evenly.
  int max_candidates_per_shape = 0;
  // 0: none. Else no new shape starts after this many seconds, and each shape times
  // candidates only until its share of the time left, (budget - elapsed) / shapes left,
  // is spent (at least 4 when it has them).
  double time_budget_s = 0;
  std::string command;  // the command line, recorded in the results
};

// Throws DeviceError when no GPU is visible or the build has no CUDA backend, ConfigError for
// bad options (naming the option), IoError when the results cannot be written.
void run_gemm_bench(const GemmBenchOptions& options);

}  // namespace hetrec::gemm::gemm
