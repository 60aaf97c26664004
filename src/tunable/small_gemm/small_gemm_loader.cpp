// The small GEMMs' place in the GPU model's registry of loaders (model/gpu/tuned_kernels.h).
// Their winners are per GEMM shape, not per model: each MLP layer looks its own shape up
// when it is built (model/gpu/tuned_small_gemms.h), so this loader has nothing to load at
// start and registers the family only so that the registry covers every family.
#include <vector>

#include "model/gpu/tuned_kernels.h"
#include "tunable/small_gemm/small_gemm_cost.h"

namespace hetrec::inline model::gpu_model {

void add_small_gemm_loaders(std::vector<TunedKernelLoader>& out) {
  out.push_back({tune::kSmallGemmKernel, [](const TunedKernelInputs&, TunedKernels&) {}});
}

}  // namespace hetrec::model::gpu_model
