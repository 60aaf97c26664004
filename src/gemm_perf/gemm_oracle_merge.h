#pragma once
// Merges the pieces of one oracle corpus (`hetrec gemm bench --shard i/n`, or runs of other
// families) into one results file. The pieces must come from the same GPU, driver, CUDA
// runtime, cuBLASLt and timing settings; no shape may appear twice.
#include <string>
#include <vector>

namespace hetrec::inline gemm_perf {

// The merged record as JSON text: the first piece's header, every piece's shapes in the
// order given, "complete" only when every piece is complete, and "merged_from" listing each
// piece's file, command, date, commit and shape count. Throws ConfigError naming both files
// and the field when the pieces differ, or the shape id found twice; IoError when a piece
// cannot be read.
std::string merge_gemm_oracles(const std::vector<std::string>& paths);

}  // namespace hetrec::gemm_perf::gemm_perf
