#include "kernels/convert.h"

#include "gpu/check.h"
#include "gpu/half.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

constexpr int kThreads = 256;

// One thread per element; consecutive threads take consecutive columns of a row, so
// loads and stores coalesce for any leading dimensions.
__global__ void __launch_bounds__(kThreads)
    f32_to_bf16_kernel(const float* __restrict__ in, int64_t ld_in, uint16_t* __restrict__ out, int64_t ld_out,
                       int64_t rows, int64_t cols) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= rows * cols) return;
  const int64_t r = i / cols;
  const int64_t c = i - r * cols;
  out[r * ld_out + c] = gpu::f32_to_bf16_bits(in[r * ld_in + c]);
}

}  // namespace

void f32_to_bf16_matrix(const float* in, int64_t ld_in, uint16_t* out, int64_t ld_out, int64_t rows, int64_t cols,
                        gpu::stream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  if (ld_in < cols || ld_out < cols)
    throw InternalError("f32_to_bf16_matrix: leading dimension below the column count");
  f32_to_bf16_kernel<<<grid_for(rows * cols, kThreads), kThreads, 0, stream>>>(in, ld_in, out, ld_out, rows, cols);
  HETREC_GPU_CHECK_LAUNCH("f32_to_bf16_kernel");
}

}  // namespace hetrec::kernels
