#pragma once
// The memory model: bytes a recipe needs on the device (and in host memory) for a model,
// consumer by consumer, as the GPU model (model/gpu/) allocates them: embedding rows and
// their sparse optimizer state, dense parameters with their gradients and optimizer
// slots, the per-sample activations, gradients and workspaces, the batch buffers, the
// cuBLASLt workspace, the caching allocator's rounding and the runtime context.
#include <cstddef>
#include <string>
#include <vector>

#include "hw/hardware.h"
#include "model/model_config.h"
#include "plan/id_distribution.h"
#include "plan/recipe.h"

namespace hetrec::inline plan {

enum class MemorySpace { device, host };

struct MemoryConsumer {
  std::string name;  // what it is, e.g. "cross net activations (x_l, z_l, V x_l of 3 layers)"
  MemorySpace space = MemorySpace::device;
  double bytes = 0.0;
};

struct MemoryEstimate {
  std::string hardware;
  int rank = 0;   // several GPUs: which rank this is
  int ranks = 1;  // the recipe's GPUs
  double usable_bytes = 0.0;  // device memory a process can allocate (device_memory.h)
  std::vector<MemoryConsumer> consumers;  // device consumers first, in allocation order

  double device_bytes() const;
  double host_bytes() const;
  // Whether the device consumers fit in (1 - headroom) of the usable device memory;
  // headroom in [0, 1) (ConfigError otherwise). `hw` must be the estimate's hardware.
  bool fits(const Hardware& hw, double headroom) const;
  // The same against the estimate's own usable_bytes.
  bool fits_usable(double headroom) const { return device_bytes() <= (1.0 - headroom) * usable_bytes; }
  // The `count` largest device consumers, largest first.
  std::vector<MemoryConsumer> largest_device_consumers(std::size_t count) const;
  // Why the recipe does not fit: what it needs, what the device offers, and the largest
  // consumers with their sizes.
  std::string refusal(const Hardware& hw, double headroom) const;
};

// Consumers listed by a refusal.
inline constexpr std::size_t kRefusalConsumers = 4;

// The device and host memory of each GPU of the recipe (one entry with one GPU): with
// several GPUs, each rank's shards (plan/sharded_layout.h) with their optimizer state,
// bag stagings of the global batch and fused-backward workspaces, the dense state, the
// activations of its share of the batch, and the embedding exchange buffers. `ids` only
// matters for row_wise blocks (their expected ids size the stagings). Host memory is per
// rank: the host holds the sum. Not counted: NCCL's own buffers (outside the caching
// allocator). `landing_buffers`: the batch stagings' landing buffers (the next batch,
// copied during the step: BatchStaging::copy_ahead), which the engine has; false for
// measurements of an engine from before it did. Throws ConfigError when the recipe does
// not match the model (validate_recipe).
std::vector<MemoryEstimate> estimate_rank_memory(const ModelConfig& model, const OptimConfig& optim,
                                                 const Recipe& recipe, const Hardware& hw,
                                                 const IdDistribution& ids = IdDistribution{},
                                                 bool landing_buffers = true);
// The estimate of the rank that needs the most device memory (the one that decides
// whether the recipe fits); with one GPU, the GPU's.
MemoryEstimate estimate_memory(const ModelConfig& model, const OptimConfig& optim, const Recipe& recipe,
                               const Hardware& hw, const IdDistribution& ids = IdDistribution{},
                               bool landing_buffers = true);

// "97.37 GiB", "512.0 MiB", "12.0 KiB".
std::string format_bytes(double bytes);

}  // namespace hetrec::plan::plan
