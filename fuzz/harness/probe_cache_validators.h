#pragma once
// The validators the probe cache target loads files under; the seed generator
// (fuzz/make_seeds.cpp) writes its probe seeds under the same ones, so seeds are not
// discarded at the validator check.
#include "gemm/device_probe.h"

namespace hetrec::fuzz {

inline ProbeValidators fuzz_probe_validators() { return {"NVIDIA H200", "13.0", "13.0", "cublasLt 13.0.0"}; }

}  // namespace hetrec::fuzz
