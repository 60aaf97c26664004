#include "model/gpu/step_phases.h"

namespace hetrec::inline model::gpu_model {
namespace {

constexpr const char* kPhaseNames[kPhaseCount] = {
    "",          "bottom_mlp_fwd",  "embedding_fwd",  "embedding_exchange", "interaction_fwd",        "top_mlp_fwd",
    "loss",      "top_mlp_bwd",     "interaction_bwd", "bottom_mlp_bwd",    "dense_all_reduce",
    "embedding_grad_exchange", "embedding_bwd_update", "dense_optimizer"};
// Phases that exist only in data-parallel steps (not reported on one device).
bool data_parallel_phase(int p) { return p == kEmbeddingExchange || p == kDenseAllReduce || p == kGradientExchange; }

}  // namespace

void StepPhases::mark(Phase phase, gpu::stream_t stream) {
  if (enabled_) events_[static_cast<std::size_t>(phase)].record(stream);
}

std::vector<std::pair<std::string, double>> StepPhases::ms(bool data_parallel) const {
  std::vector<std::pair<std::string, double>> out;
  if (!enabled_) return out;
  out.emplace_back("upload", upload_ms_);
  for (int p = 1; p < kPhaseCount; ++p)
    if (data_parallel || !data_parallel_phase(p))
      out.emplace_back(kPhaseNames[p], gpu::Event::elapsed_ms(events_[static_cast<std::size_t>(p - 1)],
                                                            events_[static_cast<std::size_t>(p)]));
  return out;
}

}  // namespace hetrec::model::gpu_model
