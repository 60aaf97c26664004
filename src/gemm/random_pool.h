#pragma once
// Device memory filled with random normal values of one element type (never zeros: a
// GEMM's power draw and a kernel check both depend on real data). A block of values is
// generated on the host and replicated over the buffer, so large pools fill at copy speed.
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "gpu/device_buffer.h"

namespace hetrec::inline gemm {

// bytes rounded up to at least one 256-byte block; types f32, bf16, f16, f8e4m3
// (InternalError for others). The values are a pure function of (seed, stream).
gpu::DeviceBuffer random_device_pool(DType type, std::size_t bytes, uint64_t seed, uint64_t stream);

}  // namespace hetrec::gemm::gemm
