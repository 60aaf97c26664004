#pragma once
// Device-wide exclusive prefix sum of 32-bit unsigned counts (reduce-then-scan, with the
// block totals scanned recursively). Deterministic: integer sums.
#include <cstddef>
#include <cstdint>

#include "gpu/platform.h"
#include "kernels/scan_geometry.h"  // exclusive_scan_workspace_bytes, the tiles

namespace hetrec::kernels {

// out[i] = in[0] + ... + in[i-1] for i < n (out[0] = 0). `in` and `out` may alias.
// If `total` is not null, *total receives the sum of all n elements (on the device).
void exclusive_scan(const uint32_t* in, uint32_t* out, int64_t n, uint32_t* total, void* workspace,
                    std::size_t workspace_bytes, gpu::stream_t stream);

}  // namespace hetrec::kernels
