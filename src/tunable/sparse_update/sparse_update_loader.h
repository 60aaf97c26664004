#pragma once
// The GPU model's loader of the tuned embedding sparse update (model/gpu/tuned_kernels.h).
#include "model/gpu/tuned_kernels.h"
#include "tune/winners.h"

namespace hetrec::inline model::gpu_model {

// The winner for `shape` into out.sparse_update (for bf16 gradients without a winner of
// their own, the fp32 gradients' when it is legal there), or the built-in variant and why.
void load_sparse_update_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                               const kernels::SparseUpdateShape& shape, TunedKernels& out);

}  // namespace hetrec::model::gpu_model
