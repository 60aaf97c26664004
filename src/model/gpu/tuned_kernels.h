#pragma once
// The tuned kernel variants the GPU model uses in place of the built-in ones, loaded at
// start from the winners file `hetrec tune` writes (tune/winners.h). A winner applies
// only to the GPU, compute capability, driver and kernel sources it was measured with;
// otherwise the built-in variant runs and the note says why.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "tunable/cross_net/cross_net_tuned.h"
#include "tunable/dot_interaction/dot_interaction_backward_tuned.h"
#include "tunable/dot_interaction/dot_interaction_tuned.h"
#include "tunable/embedding_forward/embedding_forward_tuned.h"
#include "tunable/sparse_update/sparse_update_tuned.h"
#include "tune/winners.h"

namespace hetrec::inline model::gpu_model {

struct TunedKernels {
  std::unique_ptr<kernels::TunedEmbeddingForward> embedding_forward;  // null: the built-in variant
  std::unique_ptr<kernels::TunedDotForward> dot_forward;               // null: the built-in variant
  std::unique_ptr<kernels::TunedSparseUpdate> sparse_update;          // null: the built-in variant
  std::unique_ptr<kernels::TunedDotBackward> dot_backward;             // null: the built-in variant
  std::unique_ptr<kernels::TunedCrossForward> cross_forward;          // null: the built-in variant
  std::unique_ptr<kernels::TunedCrossBackward> cross_backward;        // null: the built-in variant
  std::string note;  // for the model's description
};

// What a family's loader reads: the winners, the device, and the shapes of the model's
// tunable kernels. `dot_shape` (the forward's and the backward's) is null for a model without
// the dot interaction (DCNv2), `cross_shape` for one without a cross net (DLRM, or DCNv2
// without cross layers).
struct TunedKernelInputs {
  const tune::WinnersStore& store;
  const gpu::DeviceProperties& device;
  const std::string& winners_file;
  const kernels::EmbeddingForwardShape& forward_shape;
  const kernels::DotForwardShape* dot_shape;
  const kernels::SparseUpdateShape& update_shape;
  const kernels::CrossNetShape* cross_shape;
};

// One family's loader: its winner (or the built-in variant and why) into its member of TunedKernels.
struct TunedKernelLoader {
  std::string kernel;  // the family's name (tune/kernel_families.h)
  std::function<void(const TunedKernelInputs&, TunedKernels&)> load;
};

// The loaders, one registry: each tunable folder's add_<folder>_loaders (in its
// <folder>_loader.cpp; tune/kernel_families.h), in the order of tune::kernel_families().
// Throws InternalError when a loader names a family that list lacks or a family has no loader.
const std::vector<TunedKernelLoader>& tuned_kernel_loaders();

// Every family's winner through its loader. An empty `winners_file` loads nothing. Throws
// ConfigError for a malformed file and DeviceError when a matching winner fails to compile.
TunedKernels load_tuned_kernels(const std::string& winners_file, const gpu::DeviceProperties& device,
                                const kernels::EmbeddingForwardShape& forward_shape,
                                const kernels::DotForwardShape* dot_shape,
                                const kernels::SparseUpdateShape& update_shape,
                                const kernels::CrossNetShape* cross_shape = nullptr);

}  // namespace hetrec::model::gpu_model
