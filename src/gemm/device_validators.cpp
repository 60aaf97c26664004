#include "gemm/device_validators.h"

#include "core/error.h"

#if defined(HETREC_WITH_GPU)
#include "gpu/blaslt.h"
#include "gpu/device.h"
#endif

namespace hetrec::inline gemm {

#if defined(HETREC_WITH_GPU)

namespace {

// "13.0" from the runtime's 13000.
std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

}  // namespace

ProbeValidators local_probe_validators(int device_index) {
  if (device_index < 0 || device_index >= gpu::device_count())
    throw DeviceError("device probe: no GPU " + std::to_string(device_index) + " is visible");
  ProbeValidators v;
  v.gpu = gpu::device_properties(device_index).name;
  v.driver = version_text(gpu::driver_version());
  v.runtime = version_text(gpu::runtime_version());
  v.blas_library = gpu::blas_lt_library_text();
  return v;
}

#else

ProbeValidators local_probe_validators(int) {
  throw DeviceError("the device probe needs a GPU build (cmake --preset cuda or hip); this build has none");
}

#endif  // HETREC_WITH_GPU

}  // namespace hetrec::gemm::gemm
