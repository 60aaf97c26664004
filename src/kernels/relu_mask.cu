#include "kernels/relu_mask.h"

#include <cstdint>
#include <string>

#include "gpu/check.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

constexpr int kThreads = 256;

// A positive 16-bit value: sign clear and the bits between the smallest subnormal and
// +infinity (0x7F80 in bf16, 0x7C00 in fp16); above that lie the NaNs.
template <uint16_t kInfinity>
__device__ inline bool positive(uint16_t bits) {
  return bits != 0 && bits <= kInfinity;
}

// One thread per unit of a row: one value, or (kVector) eight values, one 16-byte load
// of each operand and one store, where every row starts 16-byte aligned and the column
// count is a multiple of eight. Consecutive threads take consecutive units of a row.
constexpr int kPerVector = 8;

template <uint16_t kInfinity, bool kVector>
__global__ void __launch_bounds__(kThreads)
    relu_mask_kernel(uint16_t* __restrict__ dz, int64_t ld_dz, const uint16_t* __restrict__ y, int64_t ld_y,
                     int64_t rows, int64_t units_per_row) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= rows * units_per_row) return;
  const int64_t r = i / units_per_row;
  const int64_t u = i - r * units_per_row;
  if constexpr (kVector) {
    uint4* d = reinterpret_cast<uint4*>(dz + r * ld_dz) + u;
    const uint4 yv = reinterpret_cast<const uint4*>(y + r * ld_y)[u];
    uint4 g = *d;
    uint32_t* gw = reinterpret_cast<uint32_t*>(&g);
    const uint32_t* yw = reinterpret_cast<const uint32_t*>(&yv);
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      uint32_t keep = 0;
      if (positive<kInfinity>(static_cast<uint16_t>(yw[w] & 0xFFFFu))) keep |= 0x0000FFFFu;
      if (positive<kInfinity>(static_cast<uint16_t>(yw[w] >> 16))) keep |= 0xFFFF0000u;
      gw[w] &= keep;
    }
    *d = g;
  } else if (!positive<kInfinity>(y[r * ld_y + u])) {
    dz[r * ld_dz + u] = 0;
  }
}

template <uint16_t kInfinity>
void launch(uint16_t* dz, int64_t ld_dz, const uint16_t* y, int64_t ld_y, int64_t rows, int64_t cols,
            gpu::stream_t stream) {
  const bool vector = cols % kPerVector == 0 && ld_dz % kPerVector == 0 && ld_y % kPerVector == 0 &&
                      reinterpret_cast<std::uintptr_t>(dz) % 16 == 0 && reinterpret_cast<std::uintptr_t>(y) % 16 == 0;
  if (vector) {
    const int64_t per_row = cols / kPerVector;
    relu_mask_kernel<kInfinity, true>
        <<<grid_for(rows * per_row, kThreads), kThreads, 0, stream>>>(dz, ld_dz, y, ld_y, rows, per_row);
  } else {
    relu_mask_kernel<kInfinity, false>
        <<<grid_for(rows * cols, kThreads), kThreads, 0, stream>>>(dz, ld_dz, y, ld_y, rows, cols);
  }
}

}  // namespace

void relu_mask_16bit(uint16_t* dz, int64_t ld_dz, const uint16_t* y, int64_t ld_y, int64_t rows, int64_t cols,
                     DType type, gpu::stream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  if (ld_dz < cols || ld_y < cols) throw InternalError("relu_mask_16bit: leading dimension below the column count");
  switch (type) {
    case DType::bf16:
      launch<0x7F80>(dz, ld_dz, y, ld_y, rows, cols, stream);
      break;
    case DType::f16:
      launch<0x7C00>(dz, ld_dz, y, ld_y, rows, cols, stream);
      break;
    default:
      throw InternalError("relu_mask_16bit: expected bf16 or fp16, got " + std::string(dtype_name(type)));
  }
  HETREC_GPU_CHECK_LAUNCH("relu_mask_kernel");
}

}  // namespace hetrec::kernels
