#pragma once
// The identity of the local GPU and its libraries: what a measurement or a remembered
// choice made on it is valid for (the device probe, gemm/device_probe.h; the GEMM selection
// cache, gemm/cublaslt_gemm.h).
#include <string>

namespace hetrec::inline gemm {

struct ProbeValidators {
  std::string gpu;      // the driver's device name, e.g. "NVIDIA H200"
  std::string driver;   // driver version, e.g. "13.0"
  std::string runtime;  // runtime version
  std::string blas_library;  // the BLAS-Lt library and its version
  bool operator==(const ProbeValidators&) const = default;
};

// GPU builds with a visible device: the validators of the device (DeviceError otherwise).
ProbeValidators local_probe_validators(int device_index);

}  // namespace hetrec::gemm::gemm
