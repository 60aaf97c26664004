#pragma once
// The timed shortlist of the engine's GEMM selection (model.gemm_timed_shortlist,
// gemm/cublaslt_model_choice.h): each configuration of a new problem's shortlist is run on
// the operands at hand, in the caller's stream order, and timed; the caller runs the
// fastest from then on. Held-out on the recorded corpora, timing the ranker's five
// best-scored configurations and the heuristic's top-1 chooses 0.98 of the oracle in
// geomean where one zero-timing pick reaches 0.95 (docs/gemm_selection.md).
//
// The launches write D, and the aux mask or bias gradient an epilogue writes, as the real
// call then writes them again: a problem with beta = 0 is timed in place. One that reads D
// (beta != 0) is timed on a scratch D of the caller's allocator, so its accumulation is
// untouched; at most kMaxScratchBytes, else it is not timed. Never while `stream` is being
// captured into a graph (nothing may wait on the device then). CUDA only.
#include <cstddef>
#include <optional>
#include <vector>

#include "core/tensor.h"
#include "gemm/cublaslt_problem.h"
#include "gpu/platform.h"

namespace hetrec::inline gemm::cublaslt {

// The configurations are timed against each other by gpu::time_launches (gpu/launch_timing.h).
inline constexpr std::size_t kMaxScratchBytes = std::size_t{1} << 30;

// Microseconds per launch of each of `algos` (in their order), or nullopt where the problem
// is not timed (the stream is being captured, or a scratch D would exceed kMaxScratchBytes
// or does not fit in memory).
std::optional<std::vector<double>> time_shortlist(cublasLtHandle_t handle, const Problem& problem,
                                                  const MatmulDescriptors& desc, const Operands& operands,
                                                  const std::vector<cublasLtMatmulAlgo_t>& algos, void* workspace,
                                                  std::size_t workspace_bytes, gpu::stream_t stream,
                                                  Allocator& scratch_allocator);

}  // namespace hetrec::gemm::cublaslt
