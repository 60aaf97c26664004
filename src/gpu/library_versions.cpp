#include "gpu/library_versions.h"

#include "gpu/blaslt.h"
#include "gpu/collectives.h"
#include "gpu/device.h"
#include "gpu/platform.h"

namespace hetrec::gpu {
namespace {

#if defined(HETREC_GPU_HIP)
constexpr const char* kPlatform = "HIP";
// HIP_VERSION = major * 10000000 + minor * 100000 + patch.
std::string toolkit_text() {
  return std::to_string(HIP_VERSION_MAJOR) + "." + std::to_string(HIP_VERSION_MINOR) + "." +
         std::to_string(HIP_VERSION_PATCH);
}
// hipRuntimeGetVersion and hipDriverGetVersion report HIP_VERSION's encoding.
std::string runtime_text(int v) {
  return std::to_string(v / 10000000) + "." + std::to_string(v / 100000 % 100) + "." + std::to_string(v % 100000);
}
#else
constexpr const char* kPlatform = "CUDA";
// CUDART_VERSION and cudaRuntimeGetVersion: 1000 * major + 10 * minor.
std::string runtime_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }
std::string toolkit_text() { return runtime_text(CUDART_VERSION); }
#endif

template <class F>
std::string queried(F query) {
  try {
    const int v = query();
    return v > 0 ? runtime_text(v) : std::string("none");
  } catch (const std::exception& e) {
    return std::string("unavailable (") + e.what() + ")";
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> library_versions() {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string platform = kPlatform;
  out.emplace_back(platform + " toolkit", toolkit_text());
  out.emplace_back(platform + " runtime", queried(runtime_version));
  out.emplace_back(platform + " driver", queried(driver_version));
  out.emplace_back("BLAS-Lt", blas_lt_library_text());
  out.emplace_back("collectives", collectives_available() ? collectives_version() : std::string("none"));
  return out;
}

}  // namespace hetrec::gpu
