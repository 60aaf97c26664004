#include "model/gpu/tuned_small_gemms.h"

#include <filesystem>

#include "core/error.h"
#include "tunable/small_gemm/small_gemm_sources.h"
#include "tune/winners.h"

namespace hetrec::inline model::gpu_model {

TunedSmallGemms load_tuned_small_gemms(const std::string& winners_file, const gpu::DeviceProperties& device,
                                       const std::vector<tune::SmallGemmLayerGemm>& bottom,
                                       const std::vector<tune::SmallGemmLayerGemm>& top) {
  TunedSmallGemms out;
  if (winners_file.empty()) return out;
  if (!std::filesystem::exists(winners_file))
    throw ConfigError("tuned kernels file '" + winners_file + "' does not exist (run `hetrec tune` to write it)");
  const tune::WinnersStore store = tune::WinnersStore::load(winners_file);
  tune::WinnerKey key;
  key.kernel = tune::kSmallGemmKernel;
  key.gpu = device.name;
  key.compute_capability = std::to_string(device.compute_major) + "." + std::to_string(device.compute_minor);
  key.driver_version = gpu::driver_version();
  key.source_hash = kernels::small_gemm_sources_hash();
  std::string used;
  std::size_t stale = 0;
  const auto load = [&](const std::vector<tune::SmallGemmLayerGemm>& gemms, std::vector<SmallGemmUse>& uses) {
    for (const tune::SmallGemmLayerGemm& g : gemms) {
      key.shape = g.shape.key();
      const std::optional<tune::Winner> w = store.find(key);
      if (!w) {
        stale += store.stale(key).size();
        continue;
      }
      out.kernels.push_back(std::make_unique<kernels::TunedSmallGemm>(
          g.shape, tune::to_small_gemm_variant(w->params), device.compute_major, device.compute_minor,
          w->kernel_header));
      uses.push_back({g.layer, g.pass, out.kernels.back().get(), {}});
      used += (used.empty() ? "" : ", ") + g.role;
    }
  };
  load(bottom, out.bottom);
  load(top, out.top);
  if (!used.empty()) out.note = "small-GEMM kernel (tuned) for " + used;
  if (stale > 0)
    out.note += (out.note.empty() ? "" : "; ") + std::to_string(stale) +
                " stale small-GEMM winner(s) ignored: measured on another GPU, driver or kernel source";
  return out;
}

}  // namespace hetrec::model::gpu_model
