#include "kernels/convert.h"

#include <string>

#include "gpu/check.h"
#include "gpu/half.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

constexpr int kThreads = 256;

template <bool kFp16>
__device__ inline uint16_t to_16bit(float x) {
  if constexpr (kFp16) return gpu::f32_to_f16_bits(x);
  else return gpu::f32_to_bf16_bits(x);
}

// One thread per element; consecutive threads take consecutive columns of a row, so
// loads and stores coalesce for any leading dimensions.
template <bool kFp16>
__global__ void __launch_bounds__(kThreads)
    f32_to_16bit_kernel(const float* __restrict__ in, int64_t ld_in, uint16_t* __restrict__ out, int64_t ld_out,
                        int64_t rows, int64_t cols) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= rows * cols) return;
  const int64_t r = i / cols;
  const int64_t c = i - r * cols;
  out[r * ld_out + c] = to_16bit<kFp16>(in[r * ld_in + c]);
}

}  // namespace

void f32_to_16bit_matrix(const float* in, int64_t ld_in, uint16_t* out, int64_t ld_out, int64_t rows, int64_t cols,
                         DType to, gpu::stream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  if (ld_in < cols || ld_out < cols)
    throw InternalError("f32_to_16bit_matrix: leading dimension below the column count");
  const unsigned grid = grid_for(rows * cols, kThreads);
  switch (to) {
    case DType::bf16:
      f32_to_16bit_kernel<false><<<grid, kThreads, 0, stream>>>(in, ld_in, out, ld_out, rows, cols);
      break;
    case DType::f16:
      f32_to_16bit_kernel<true><<<grid, kThreads, 0, stream>>>(in, ld_in, out, ld_out, rows, cols);
      break;
    default:
      throw InternalError("f32_to_16bit_matrix: expected bf16 or fp16, got " + std::string(dtype_name(to)));
  }
  HETREC_GPU_CHECK_LAUNCH("f32_to_16bit_kernel");
}

}  // namespace hetrec::kernels
