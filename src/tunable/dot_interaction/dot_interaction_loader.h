#pragma once
// The GPU model's loaders of the dot interaction's tuned forward and backward
// (model/gpu/tuned_kernels.h).
#include "model/gpu/tuned_kernels.h"
#include "tune/winners.h"

namespace hetrec::inline model::gpu_model {

// The forward's winner for `shape` into out.dot_forward, or the built-in variant and why.
void load_dot_forward_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                             const kernels::DotForwardShape& shape, TunedKernels& out);

// The backward's winner into out.dot_backward, or the built-in variant and why.
void load_dot_backward_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                              const kernels::DotForwardShape& shape, TunedKernels& out);

}  // namespace hetrec::model::gpu_model
