#include "model/gpu/tuned_kernels.h"

#include <filesystem>
#include <functional>
#include <map>

#include "core/error.h"
#include "tunable/cross_net/cross_net_cost.h"
#include "tunable/cross_net/cross_net_loader.h"
#include "tunable/dot_interaction/dot_backward_cost.h"
#include "tunable/dot_interaction/dot_interaction_cost.h"
#include "tunable/dot_interaction/dot_interaction_loader.h"
#include "tunable/embedding_forward/embedding_forward_cost.h"
#include "tunable/embedding_forward/embedding_forward_loader.h"
#include "tunable/small_gemm/small_gemm_cost.h"
#include "tunable/sparse_update/sparse_update_cost.h"
#include "tunable/sparse_update/sparse_update_loader.h"
#include "tune/kernel_families.h"
#include "tune/winners.h"

namespace hetrec::inline model::gpu_model {

TunedKernels load_tuned_kernels(const std::string& winners_file, const gpu::DeviceProperties& device,
                                const kernels::EmbeddingForwardShape& forward_shape,
                                const kernels::DotForwardShape* dot_shape,
                                const kernels::SparseUpdateShape& update_shape,
                                const kernels::CrossNetShape* cross_shape) {
  TunedKernels out;
  if (winners_file.empty()) return out;
  if (!std::filesystem::exists(winners_file))
    throw ConfigError("tuned kernels file '" + winners_file + "' does not exist (run `hetrec tune` to write it)");
  const tune::WinnersStore store = tune::WinnersStore::load(winners_file);

  // One loader per family of the list `hetrec tune` searches (tune/kernel_families.h), each
  // in its family's folder (tunable/<family>/<family>_loader.h), run in the list's order;
  // the small GEMMs' winners load per layer (model/gpu/tuned_small_gemms.h).
  const std::map<std::string, std::function<void()>> loaders = {
      {tune::kEmbeddingForwardKernel,
       [&] { load_embedding_forward_kernel(store, device, forward_shape, winners_file, out); }},
      {tune::kDotForwardKernel, [&] { if (dot_shape) load_dot_forward_kernel(store, device, *dot_shape, out); }},
      {tune::kSparseUpdateKernel, [&] { load_sparse_update_kernel(store, device, update_shape, out); }},
      {tune::kDotBackwardKernel, [&] { if (dot_shape) load_dot_backward_kernel(store, device, *dot_shape, out); }},
      {tune::kCrossForwardKernel,
       [&] { if (cross_shape) load_cross_forward_kernel(store, device, *cross_shape, out); }},
      {tune::kCrossBackwardKernel,
       [&] { if (cross_shape) load_cross_backward_kernel(store, device, *cross_shape, out); }},
      {tune::kSmallGemmKernel, [] {}}};
  if (loaders.size() != tune::kernel_families().size())
    throw InternalError("tuned kernels: a loader names a kernel family that tune/kernel_families.h does not list");
  for (const tune::KernelFamily& f : tune::kernel_families()) {
    const auto it = loaders.find(f.kernel);
    if (it == loaders.end())
      throw InternalError("tuned kernels: kernel family '" + f.kernel + "' (tune/kernel_families.h) has no loader");
    it->second();
  }
  return out;
}

}  // namespace hetrec::model::gpu_model
