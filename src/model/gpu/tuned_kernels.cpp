#include "model/gpu/tuned_kernels.h"

#include <filesystem>

#include "core/error.h"
#include "tune/kernel_families.h"

namespace hetrec::inline model::gpu_model {

// Each tunable folder's loaders, defined in its <folder>_loader.cpp.
#define HETREC_TUNABLE_FOLDER(folder) void add_##folder##_loaders(std::vector<TunedKernelLoader>& out);
#include "tunable/tunable_folders.def"
#undef HETREC_TUNABLE_FOLDER

const std::vector<TunedKernelLoader>& tuned_kernel_loaders() {
  static const std::vector<TunedKernelLoader> loaders = [] {
    std::vector<TunedKernelLoader> found;
#define HETREC_TUNABLE_FOLDER(folder) add_##folder##_loaders(found);
#include "tunable/tunable_folders.def"
#undef HETREC_TUNABLE_FOLDER
    return tune::in_family_order(found, "loader");
  }();
  return loaders;
}

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
  const TunedKernelInputs inputs{store, device, winners_file, forward_shape, dot_shape, update_shape, cross_shape};
  for (const TunedKernelLoader& l : tuned_kernel_loaders()) l.load(inputs, out);
  return out;
}

}  // namespace hetrec::model::gpu_model
