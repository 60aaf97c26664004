// Fuzz target: the device probe cache file (gemm/device_probe.h), read under fixed
// validators (fuzz_probe_validators, which the seeds are written under).
#include <cmath>
#include <string>

#include "gemm/device_probe.h"
#include "harness/fuzz_support.h"
#include "harness/fuzz_targets.h"
#include "harness/probe_cache_validators.h"

namespace hetrec::fuzz {

void probe_cache(std::span<const uint8_t> data) {
  const MemoryFile file(std::string_view(reinterpret_cast<const char*>(data.data()), data.size()));
  const ProbeValidators validators = fuzz_probe_validators();
  std::string why;
  // A damaged file is no probe (and says why), never an exception.
  const std::optional<DeviceProbe> p = load_device_probe(file.path(), validators, &why);
  if (!p) {
    if (why.empty()) finding("a refused probe cache without a reason");
    return;
  }
  if (!(p->copy_tbs > 0.0) || !std::isfinite(p->copy_tbs) || !(p->copy_bytes > 0.0) || p->gemm_size < 1)
    finding("accepted copy_tbs " + std::to_string(p->copy_tbs) + ", copy_bytes " + std::to_string(p->copy_bytes) +
            ", gemm_size " + std::to_string(p->gemm_size));
  for (const auto& [name, rate] : p->gemm_tflops)
    if (!(rate > 0.0) || !std::isfinite(rate)) finding("accepted gemm_tflops." + name + " = " + std::to_string(rate));
  for (const auto& u : p->cluster_units)
    if (u.cluster_size < 2 || u.ctas_per_unit < 1 || u.max_active_clusters < 0 || !std::isfinite(u.units()))
      finding("accepted cluster units of size " + std::to_string(u.cluster_size));
  // A save and a load give back the same probe.
  const ScratchDirectory dir;
  const std::string path = dir.path() + "/device-probe.json";
  save_device_probe(*p, path);
  const std::optional<DeviceProbe> again = load_device_probe(path, validators, &why);
  if (!again) finding("a saved probe does not load again: " + why);
  if (again->copy_tbs != p->copy_tbs || again->copy_bytes != p->copy_bytes || again->gemm_size != p->gemm_size ||
      again->gemm_tflops != p->gemm_tflops || again->cluster_units.size() != p->cluster_units.size() ||
      again->date != p->date)
    finding("the probe changed in a save/load round trip");
}

}  // namespace hetrec::fuzz
