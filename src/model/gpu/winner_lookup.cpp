#include "model/gpu/winner_lookup.h"

#include "kernels/rtc_sources.h"

namespace hetrec::inline model::gpu_model {

std::optional<tune::Winner> find_winner(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                                        const std::string& kernel, const std::string& shape, std::string& why_not) {
  tune::WinnerKey key;
  key.kernel = kernel;
  key.shape = shape;
  key.gpu = device.name;
  key.compute_capability = std::to_string(device.compute_major) + "." + std::to_string(device.compute_minor);
  key.driver_version = gpu::driver_version();
  key.source_hash = kernels::rtc_sources_hash();
  std::optional<tune::Winner> w = store.find(key);
  if (!w) {
    const auto stale = store.stale(key);
    why_not = stale.empty() ? "no tuned winner for " + shape + " on " + key.gpu
                            : std::to_string(stale.size()) + " stale winner(s) for " + shape +
                                  " ignored: measured on another GPU, driver or kernel source";
  }
  return w;
}

std::optional<tune::Winner> borrowed_winner(const tune::WinnersStore& store, const gpu::DeviceProperties& device,
                                            const std::string& kernel, const std::string& fp32_key,
                                            const std::function<bool(const tune::ParameterSet&)>& legal,
                                            const std::string& what, std::string& note) {
  std::string unused;
  auto w = find_winner(store, device, kernel, fp32_key, unused);
  if (!w || !w->kernel_header.empty() || !legal(w->params)) return std::nullopt;
  note = " (the " + fp32_key + " winner, compiled for " + what + ")";
  return w;
}

std::string joined_note(const std::string& a, const std::string& b) { return a.empty() ? b : a + "; " + b; }

std::string tuned_note(const std::string& what, const tune::Winner& w) {
  return what + ": tuned variant " + tune::describe(w.params) +
         (w.kernel_header.empty() ? "" : " (model-rewritten source)");
}

}  // namespace hetrec::model::gpu_model
