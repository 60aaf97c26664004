#pragma once
// The GPU model's loaders of the cross net's two tuned passes (model/gpu/tuned_kernels.h).
#include "model/gpu/tuned_kernels.h"
#include "tune/winners.h"

namespace hetrec::inline model::gpu_model {

// The forward pass's winner for `shape` into out.cross_forward, or the built-in variant
// and why (out.note).
void load_cross_forward_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                               const kernels::CrossNetShape& shape, TunedKernels& out);

// The backward pass's winner into out.cross_backward, or the built-in variant and why.
void load_cross_backward_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                                const kernels::CrossNetShape& shape, TunedKernels& out);

}  // namespace hetrec::model::gpu_model
