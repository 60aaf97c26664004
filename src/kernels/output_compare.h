#pragma once
// Compares two device matrices element by element (a GEMM candidate's output against a
// reference output), for the cuBLASLt oracle's verification of every candidate.
#include <cstdint>

#include "core/dtype.h"
#include "gpu/platform.h"

namespace hetrec::kernels {

// What compare_outputs writes to the device: max |x - ref| and max |ref| over the finite
// elements, and the count of elements where x or ref is NaN or infinite.
struct CompareResult {
  float max_abs_diff;
  float max_abs_ref;
  uint32_t nonfinite;
};

// n elements of `type` (f32, bf16 or f16) at x and ref, dense. *result (device memory)
// is overwritten.
void compare_outputs(DType type, const void* x, const void* ref, int64_t n, CompareResult* result,
                     gpu::stream_t stream);

}  // namespace hetrec::kernels
