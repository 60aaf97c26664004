#include "tunable/dot_interaction/dot_interaction_loader.h"

#include "model/gpu/winner_lookup.h"
#include "tunable/dot_interaction/dot_backward_cost.h"
#include "tunable/dot_interaction/dot_interaction_cost.h"

namespace hetrec::inline model::gpu_model {

void load_dot_forward_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                             const kernels::DotForwardShape& shape, TunedKernels& out) {
  std::string why_not;
  const auto w = find_winner(store, device, tune::kDotForwardKernel, shape.key(), why_not);
  out.dot_forward = tuned_or_builtin<kernels::TunedDotForward>(w, shape, tune::to_dot_variant, device,
                                                               "dot interaction", why_not, "", out.note);
}

void load_dot_backward_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                              const kernels::DotForwardShape& shape, TunedKernels& out) {
  std::string why_not;
  const auto w = find_winner(store, device, tune::kDotBackwardKernel, shape.key(), why_not);
  out.dot_backward = tuned_or_builtin<kernels::TunedDotBackward>(w, shape, tune::to_dot_backward_variant, device,
                                                                 "dot interaction backward", why_not, "", out.note);
}

// This folder's loaders in the GPU model's registry (model/gpu/tuned_kernels.h).
void add_dot_interaction_loaders(std::vector<TunedKernelLoader>& out) {
  out.push_back({tune::kDotForwardKernel, [](const TunedKernelInputs& in, TunedKernels& k) {
                   if (in.dot_shape) load_dot_forward_kernel(in.store, in.device, *in.dot_shape, k);
                 }});
  out.push_back({tune::kDotBackwardKernel, [](const TunedKernelInputs& in, TunedKernels& k) {
                   if (in.dot_shape) load_dot_backward_kernel(in.store, in.device, *in.dot_shape, k);
                 }});
}

}  // namespace hetrec::model::gpu_model
