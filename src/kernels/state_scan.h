#pragma once
// The state check of model/state_check.h on device memory: the first element of a dense
// array that is NaN, infinite or beyond a bound in magnitude, found without copying the
// array to the host (a GPU model's tables can be tens of gigabytes).
#include <cstdint>

#include "core/dtype.h"
#include "gpu/platform.h"

namespace hetrec::kernels {

// Writes to *first (device memory) the lowest index i < n of the n elements of `type`
// (f32, bf16 or f16) at x such that x[i] is not finite or |x[i]| > bound, or n when there
// is none. Asynchronous on `stream`.
void find_first_out_of_bound(DType type, const void* x, int64_t n, float bound, int64_t* first,
                             gpu::stream_t stream);

}  // namespace hetrec::kernels
