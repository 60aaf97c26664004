#pragma once
// The GPU model's loader of the tuned embedding bag forward (model/gpu/tuned_kernels.h).
#include <string>

#include "model/gpu/tuned_kernels.h"
#include "tune/winners.h"

namespace hetrec::inline model::gpu_model {

// The winner for `shape` into out.embedding_forward (for a bf16 output without a winner of
// its own, the fp32 output's when it is legal there), or the built-in variant and why.
// `winners_file` is named in the note.
void load_embedding_forward_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                                   const kernels::EmbeddingForwardShape& shape, const std::string& winners_file,
                                   TunedKernels& out);

}  // namespace hetrec::model::gpu_model
