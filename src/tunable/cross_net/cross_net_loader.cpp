#include "tunable/cross_net/cross_net_loader.h"

#include "model/gpu/winner_lookup.h"
#include "tunable/cross_net/cross_net_cost.h"

namespace hetrec::gpu_model {

void load_cross_forward_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                               const kernels::CrossNetShape& shape, TunedKernels& out) {
  std::string why_not;
  if (const auto w = find_winner(store, device, tune::kCrossForwardKernel, shape.key(), why_not)) {
    out.cross_forward = std::make_unique<kernels::TunedCrossForward>(
        shape, tune::to_cross_forward_variant(w->params), device.compute_major, device.compute_minor,
        w->kernel_header);
    out.note = joined_note(out.note, tuned_note("cross forward", *w));
  } else {
    out.note = joined_note(out.note, "cross forward: built-in variant (" + why_not + ")");
  }
}

void load_cross_backward_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                                const kernels::CrossNetShape& shape, TunedKernels& out) {
  std::string why_not;
  if (const auto w = find_winner(store, device, tune::kCrossBackwardKernel, shape.key(), why_not)) {
    out.cross_backward = std::make_unique<kernels::TunedCrossBackward>(
        shape, tune::to_cross_backward_variant(w->params), device.compute_major, device.compute_minor,
        w->kernel_header);
    out.note = joined_note(out.note, tuned_note("cross backward", *w));
  } else {
    out.note = joined_note(out.note, "cross backward: built-in variant (" + why_not + ")");
  }
}

}  // namespace hetrec::gpu_model
