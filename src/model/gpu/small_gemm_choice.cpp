#include "model/gpu/small_gemm_choice.h"

#include <algorithm>

#include "gemm_perf/gemm_ranker.h"
#include "gpu/launch_timing.h"

namespace hetrec::inline model::gpu_model {

void SmallGemmChoice::set_uses(std::vector<SmallGemmUse> uses) {
  uses_ = std::move(uses);
  decisions_.clear();
  workspace_ = Tensor();
}

const kernels::TunedSmallGemm* SmallGemmChoice::choose(int layer, tune::SmallGemmPass pass, int64_t batch,
                                                       cublaslt::Gemm& gemm, const cublaslt::Problem& problem,
                                                       const cublaslt::Operands& operands, const Launches& launches) {
  for (std::size_t i = 0; i < uses_.size(); ++i) {
    const SmallGemmUse& u = uses_[i];
    if (u.layer != layer || u.pass != pass) continue;
    if (!u.predicted_us) return u.kernel;
    const auto key = std::make_pair(i, batch);
    auto it = decisions_.find(key);
    if (it == decisions_.end()) {
      // No prediction for the library's configuration (its heuristic chose): the kernel the
      // model can price runs.
      SmallGemmDecision d;
      d.batch = batch;
      d.small_gemm_us = u.predicted_us(batch);
      d.cublaslt_us = gemm.predicted_us(problem, operands);
      d.small_gemm = !d.cublaslt_us || d.small_gemm_us < *d.cublaslt_us;
      if (gemm.times_candidates()) {
        const kernels::TunedSmallGemm& kernel = *u.kernel;
        const auto us = gpu::time_launches({launches.cublaslt, [&] { launches.small(kernel); }}, launches.stream);
        if (!us) return d.small_gemm ? u.kernel : nullptr;  // being captured: timed at a later call
        d.cublaslt_measured_us = (*us)[0];
        d.small_gemm_measured_us = (*us)[1];
        d.small_gemm = shortlist_winner(*us, /*heuristic=*/0) == 1;
      }
      it = decisions_.emplace(key, d).first;
    }
    return it->second.small_gemm ? u.kernel : nullptr;
  }
  return nullptr;
}

std::vector<SmallGemmDecision> SmallGemmChoice::decisions(const std::string& prefix) const {
  std::vector<SmallGemmDecision> out;
  for (const auto& [key, d] : decisions_) {
    const SmallGemmUse& u = uses_[key.first];
    const char* pass = u.pass == tune::SmallGemmPass::forward           ? "forward"
                       : u.pass == tune::SmallGemmPass::weight_gradient ? "weight gradient"
                                                                        : "input gradient";
    out.push_back(d);
    out.back().gemm = prefix + "." + std::to_string(u.layer) + " " + pass;
  }
  return out;
}

void SmallGemmChoice::reserve(Allocator& device) {
  std::size_t floats = 0;
  for (const SmallGemmUse& u : uses_) floats = std::max(floats, u.kernel->workspace_floats());
  workspace_ = floats > 0 ? Tensor::empty({static_cast<int64_t>(floats)}, DType::f32, device) : Tensor();
}

}  // namespace hetrec::model::gpu_model
