#include "model/gpu/tuned_kernels.h"

#include <filesystem>

#include "core/error.h"
#include "kernels/rtc_sources.h"
#include "tune/embedding_forward_model.h"
#include "tune/winners.h"

namespace hetrec::gpu_model {

TunedKernels load_tuned_kernels(const std::string& winners_file, const gpu::DeviceProperties& device,
                                const kernels::EmbeddingForwardShape& forward_shape) {
  TunedKernels out;
  if (winners_file.empty()) return out;
  if (!std::filesystem::exists(winners_file))
    throw ConfigError("tuned kernels file '" + winners_file + "' does not exist (run `hetrec tune` to write it)");
  const tune::WinnersStore store = tune::WinnersStore::load(winners_file);
  tune::WinnerKey key;
  key.kernel = tune::kEmbeddingForwardKernel;
  key.shape = forward_shape.key();
  key.gpu = device.name;
  key.compute_capability = std::to_string(device.compute_major) + "." + std::to_string(device.compute_minor);
  key.driver_version = gpu::driver_version();
  key.source_hash = kernels::rtc_sources_hash();
  const std::optional<tune::Winner> w = store.find(key);
  if (!w) {
    const auto stale = store.stale(key);
    out.note = "embedding forward: built-in variant (" +
               (stale.empty() ? "no tuned winner for " + key.shape + " on " + key.gpu
                              : std::to_string(stale.size()) + " stale winner(s) for " + key.shape +
                                    " ignored: measured on another GPU, driver or kernel source") +
               ")";
    return out;
  }
  const kernels::EmbeddingForwardVariant v = tune::to_forward_variant(w->params);
  out.embedding_forward = std::make_unique<kernels::TunedEmbeddingForward>(
      forward_shape, v, device.compute_major, device.compute_minor, w->kernel_header);
  out.note = "embedding forward: tuned variant " + tune::describe(w->params) +
             (w->kernel_header.empty() ? "" : " (model-rewritten source)") + " from " + winners_file;
  return out;
}

}  // namespace hetrec::gpu_model
