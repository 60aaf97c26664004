#include "tunable/embedding_forward/embedding_forward_loader.h"

#include "model/gpu/winner_lookup.h"
#include "tunable/embedding_forward/embedding_forward_cost.h"

namespace hetrec::inline model::gpu_model {

void load_embedding_forward_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                                   const kernels::EmbeddingForwardShape& shape, const std::string& winners_file,
                                   TunedKernels& out) {
  std::string why_not;
  auto forward = find_winner(store, device, tune::kEmbeddingForwardKernel, shape.key(), why_not);
  std::string borrowed;
  if (!forward && shape.out_dtype == DType::bf16) {
    kernels::EmbeddingForwardShape fp32_out = shape;
    fp32_out.out_dtype = DType::f32;
    forward = borrowed_winner(
        store, device, tune::kEmbeddingForwardKernel, fp32_out.key(),
        [&](const tune::ParameterSet& p) {
          return kernels::forward_variant_problem(shape, tune::to_forward_variant(p), device.warp_size).empty();
        },
        "bf16 output", borrowed);
  }
  out.embedding_forward = tuned_or_builtin<kernels::TunedEmbeddingForward>(
      forward, shape, tune::to_forward_variant, device, "embedding forward", why_not,
      borrowed + " from " + winners_file, out.note);
}

// This folder's loaders in the GPU model's registry (model/gpu/tuned_kernels.h).
void add_embedding_forward_loaders(std::vector<TunedKernelLoader>& out) {
  out.push_back({tune::kEmbeddingForwardKernel, [](const TunedKernelInputs& in, TunedKernels& k) {
                   load_embedding_forward_kernel(in.store, in.device, in.forward_shape, in.winners_file, k);
                 }});
}

}  // namespace hetrec::model::gpu_model
