#include "tunable/cross_net/cross_net_loader.h"

#include "model/gpu/winner_lookup.h"
#include "tunable/cross_net/cross_net_cost.h"

namespace hetrec::inline model::gpu_model {

void load_cross_forward_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                               const kernels::CrossNetShape& shape, TunedKernels& out) {
  std::string why_not;
  const auto w = find_winner(store, device, tune::kCrossForwardKernel, shape.key(), why_not);
  out.cross_forward = tuned_or_builtin<kernels::TunedCrossForward>(w, shape, tune::to_cross_forward_variant, device,
                                                                   "cross forward", why_not, "", out.note);
}

void load_cross_backward_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                                const kernels::CrossNetShape& shape, TunedKernels& out) {
  std::string why_not;
  const auto w = find_winner(store, device, tune::kCrossBackwardKernel, shape.key(), why_not);
  out.cross_backward = tuned_or_builtin<kernels::TunedCrossBackward>(w, shape, tune::to_cross_backward_variant,
                                                                     device, "cross backward", why_not, "", out.note);
}

// This folder's loaders in the GPU model's registry (model/gpu/tuned_kernels.h).
void add_cross_net_loaders(std::vector<TunedKernelLoader>& out) {
  out.push_back({tune::kCrossForwardKernel, [](const TunedKernelInputs& in, TunedKernels& k) {
                   if (in.cross_shape) load_cross_forward_kernel(in.store, in.device, *in.cross_shape, k);
                 }});
  out.push_back({tune::kCrossBackwardKernel, [](const TunedKernelInputs& in, TunedKernels& k) {
                   if (in.cross_shape) load_cross_backward_kernel(in.store, in.device, *in.cross_shape, k);
                 }});
}

}  // namespace hetrec::model::gpu_model
