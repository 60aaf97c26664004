#include "tunable/sparse_update/sparse_update_loader.h"

#include "model/gpu/winner_lookup.h"
#include "tunable/sparse_update/sparse_update_cost.h"

namespace hetrec::inline model::gpu_model {

void load_sparse_update_kernel(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                               const kernels::SparseUpdateShape& shape, TunedKernels& out) {
  std::string why_not;
  auto update = find_winner(store, device, tune::kSparseUpdateKernel, shape.key(), why_not);
  std::string borrowed;
  if (!update && shape.grad_dtype == DType::bf16) {
    kernels::SparseUpdateShape fp32_grads = shape;
    fp32_grads.grad_dtype = DType::f32;
    update = borrowed_winner(
        store, device, tune::kSparseUpdateKernel, fp32_grads.key(),
        [&](const tune::ParameterSet& p) {
          return kernels::sparse_update_variant_problem(shape, tune::to_sparse_update_variant(p), device.warp_size)
              .empty();
        },
        "bf16 gradients", borrowed);
  }
  out.sparse_update = tuned_or_builtin<kernels::TunedSparseUpdate>(
      update, shape, tune::to_sparse_update_variant, device, "embedding sparse update", why_not, borrowed, out.note);
}

// This folder's loaders in the GPU model's registry (model/gpu/tuned_kernels.h).
void add_sparse_update_loaders(std::vector<TunedKernelLoader>& out) {
  out.push_back({tune::kSparseUpdateKernel, [](const TunedKernelInputs& in, TunedKernels& k) {
                   load_sparse_update_kernel(in.store, in.device, in.update_shape, k);
                 }});
}

}  // namespace hetrec::model::gpu_model
