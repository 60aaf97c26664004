#include "tunable/dot_interaction/dot_interaction_loader.h"

#include "model/gpu/winner_lookup.h"
#include "tunable/dot_interaction/dot_backward_cost.h"
#include "tunable/dot_interaction/dot_interaction_cost.h"

namespace hetrec::gpu_model {

void load_dot_forward_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                             const kernels::DotForwardShape& shape, TunedKernels& out) {
  std::string why_not;
  if (const auto w = find_winner(store, device, tune::kDotForwardKernel, shape.key(), why_not)) {
    out.dot_forward = std::make_unique<kernels::TunedDotForward>(shape, tune::to_dot_variant(w->params),
                                                                 device.compute_major, device.compute_minor,
                                                                 w->kernel_header);
    out.note = joined_note(out.note, tuned_note("dot interaction", *w));
  } else {
    out.note = joined_note(out.note, "dot interaction: built-in variant (" + why_not + ")");
  }
}

void load_dot_backward_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                              const kernels::DotForwardShape& shape, TunedKernels& out) {
  std::string why_not;
  if (const auto w = find_winner(store, device, tune::kDotBackwardKernel, shape.key(), why_not)) {
    out.dot_backward = std::make_unique<kernels::TunedDotBackward>(
        shape, tune::to_dot_backward_variant(w->params), device.compute_major, device.compute_minor,
        w->kernel_header);
    out.note = joined_note(out.note, tuned_note("dot interaction backward", *w));
  } else {
    out.note = joined_note(out.note, "dot interaction backward: built-in variant (" + why_not + ")");
  }
}

}  // namespace hetrec::gpu_model
