#pragma once
// model.gemm_selection = "model": the small-GEMM kernels (tunable/small_gemm/small_gemm_kernel.cuh)
// as candidates of the engine's GEMM selection, with no timing runs. For every GEMM of a
// narrow fp32 layer that one of the kernels can run (tune::small_gemm_mlp_gemms), the
// variant is the tuned winner where the winners file holds one, else the first of the
// model's ranking at the batch (tune/small_gemm_selection.h) that compiles and can launch
// its block. Each use carries the kernel's predicted time per batch; the MLP runs it only
// where that is below the model's prediction for cuBLASLt's configuration of the GEMM
// (model/gpu/gpu_mlp.h).
#include <cstdint>
#include <vector>

#include "gpu/device.h"
#include "hw/hardware.h"
#include "model/gpu/tuned_small_gemms.h"
#include "gemm_perf/gemm_model_params.h"
#include "tunable/small_gemm/small_gemm_cost.h"

namespace hetrec::inline model::gpu_model {

// Variants of the ranking compiled at most per GEMM before giving it to cuBLASLt (a
// variant whose registers forbid its block is the usual reason to go on).
inline constexpr int kMaxSmallGemmCompiles = 8;

// `tuned`: what load_tuned_small_gemms found (its kernels are moved into the result and
// keep serving their GEMMs, now priced). Throws DeviceError when a compile fails for a
// reason other than the variant's resources.
TunedSmallGemms choose_small_gemms_by_model(const Hardware& hw, const GemmModelParams& params,
                                            const gpu::DeviceProperties& device,
                                            const std::vector<tune::SmallGemmLayerGemm>& bottom,
                                            const std::vector<tune::SmallGemmLayerGemm>& top, int64_t batch,
                                            TunedSmallGemms tuned);

}  // namespace hetrec::model::gpu_model
