#include "model/gpu/model_small_gemms.h"

#include <memory>
#include <string>

#include "tune/small_gemm_selection.h"

namespace hetrec::inline model::gpu_model {

namespace {
// The kernel's prediction at any batch, as the selection prices it.
std::function<double(int64_t)> pricing(const Hardware& hw, const GemmModelParams& params,
                                       const kernels::SmallGemmShape& shape, const kernels::SmallGemmVariant& v) {
  return [hw, params, shape, v](int64_t batch) {
    return tune::price_small_gemm(hw, tune::SmallGemmWorkload{shape, batch}, v, params).predicted_us;
  };
}
}  // namespace

TunedSmallGemms choose_small_gemms_by_model(const Hardware& hw, const GemmModelParams& params,
                                            const gpu::DeviceProperties& device,
                                            const std::vector<tune::SmallGemmLayerGemm>& bottom,
                                            const std::vector<tune::SmallGemmLayerGemm>& top, int64_t batch,
                                            TunedSmallGemms tuned) {
  TunedSmallGemms out;
  out.kernels = std::move(tuned.kernels);
  std::string chosen;
  const auto choose = [&](const std::vector<tune::SmallGemmLayerGemm>& gemms, const std::vector<SmallGemmUse>& winners,
                          std::vector<SmallGemmUse>& uses) {
    for (const tune::SmallGemmLayerGemm& g : gemms) {
      const kernels::TunedSmallGemm* kernel = nullptr;
      for (const SmallGemmUse& w : winners)
        if (w.layer == g.layer && w.pass == g.pass) kernel = w.kernel;
      std::string origin = "tuned";
      if (!kernel) {
        origin = "model";
        int compiled = 0;
        const tune::SmallGemmWorkload w{g.shape, batch};
        for (const tune::SmallGemmPick& p : tune::rank_small_gemm(hw, tune::small_gemm_problem(w), params)) {
          if (p.workload.shape != g.shape) continue;  // another kind for the same GEMM: not this layer's call
          if (compiled++ == kMaxSmallGemmCompiles) break;
          auto k = std::make_unique<kernels::TunedSmallGemm>(g.shape, p.variant, device.compute_major,
                                                             device.compute_minor);
          if (!k->launchable()) continue;
          out.kernels.push_back(std::move(k));
          kernel = out.kernels.back().get();
          break;
        }
      }
      if (!kernel) continue;
      uses.push_back({g.layer, g.pass, kernel, pricing(hw, params, g.shape, kernel->variant())});
      chosen += (chosen.empty() ? "" : ", ") + g.role + " (" + origin + ")";
    }
  };
  choose(bottom, tuned.bottom, out.bottom);
  choose(top, tuned.top, out.top);
  if (!chosen.empty())
    out.note = "small-GEMM kernels where the model predicts them faster than cuBLASLt: " + chosen;
  // Keep the winners file's word on stale winners (the clause after the last "; ", or all).
  if (tuned.note.find("stale") != std::string::npos) {
    const std::size_t cut = tuned.note.rfind("; ");
    out.note += (out.note.empty() ? "" : "; ") + (cut == std::string::npos ? tuned.note : tuned.note.substr(cut + 2));
  }
  return out;
}

}  // namespace hetrec::model::gpu_model
