#include "kernels/convert.h"

#include <cstdint>
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

// Contiguous matrices (both leading dimensions equal the column count) are one vector:
// each thread converts 4 consecutive values, a 16-byte load and an 8-byte store.
constexpr int kPerThread = 4;

template <bool kFp16>
__global__ void __launch_bounds__(kThreads)
    f32_to_16bit_vector_kernel(const float4* __restrict__ in, uint2* __restrict__ out, int64_t quads) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= quads) return;
  const float4 v = in[i];
  uint2 o;
  o.x = static_cast<uint32_t>(to_16bit<kFp16>(v.x)) | (static_cast<uint32_t>(to_16bit<kFp16>(v.y)) << 16);
  o.y = static_cast<uint32_t>(to_16bit<kFp16>(v.z)) | (static_cast<uint32_t>(to_16bit<kFp16>(v.w)) << 16);
  out[i] = o;
}

template <bool kFp16>
void launch(const float* in, int64_t ld_in, uint16_t* out, int64_t ld_out, int64_t rows, int64_t cols,
            gpu::stream_t stream) {
  const int64_t n = rows * cols;
  const bool vector = ld_in == cols && ld_out == cols && n % kPerThread == 0 &&
                      reinterpret_cast<std::uintptr_t>(in) % 16 == 0 && reinterpret_cast<std::uintptr_t>(out) % 8 == 0;
  if (vector) {
    const int64_t quads = n / kPerThread;
    f32_to_16bit_vector_kernel<kFp16><<<grid_for(quads, kThreads), kThreads, 0, stream>>>(
        reinterpret_cast<const float4*>(in), reinterpret_cast<uint2*>(out), quads);
  } else {
    f32_to_16bit_kernel<kFp16><<<grid_for(n, kThreads), kThreads, 0, stream>>>(in, ld_in, out, ld_out, rows, cols);
  }
}

template <bool kFp16>
__global__ void __launch_bounds__(kThreads) widen_16bit_kernel(const uint16_t* __restrict__ in, float* __restrict__ out,
                                                             int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  if constexpr (kFp16) out[i] = gpu::f16_bits_to_f32(in[i]);
  else out[i] = gpu::bf16_bits_to_f32(in[i]);
}

}  // namespace

void widen_16bit(const uint16_t* in, float* out, int64_t n, DType from, gpu::stream_t stream) {
  if (n <= 0) return;
  if (from == DType::bf16) widen_16bit_kernel<false><<<grid_for(n, kThreads), kThreads, 0, stream>>>(in, out, n);
  else if (from == DType::f16) widen_16bit_kernel<true><<<grid_for(n, kThreads), kThreads, 0, stream>>>(in, out, n);
  else throw InternalError("widen_16bit: the source must be bf16 or fp16, got " + std::string(dtype_name(from)));
  HETREC_GPU_CHECK_LAUNCH("widen_16bit_kernel");
}

void f32_to_16bit_matrix(const float* in, int64_t ld_in, uint16_t* out, int64_t ld_out, int64_t rows, int64_t cols,
                         DType to, gpu::stream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  if (ld_in < cols || ld_out < cols)
    throw InternalError("f32_to_16bit_matrix: leading dimension below the column count");
  switch (to) {
    case DType::bf16:
      launch<false>(in, ld_in, out, ld_out, rows, cols, stream);
      break;
    case DType::f16:
      launch<true>(in, ld_in, out, ld_out, rows, cols, stream);
      break;
    default:
      throw InternalError("f32_to_16bit_matrix: expected bf16 or fp16, got " + std::string(dtype_name(to)));
  }
  HETREC_GPU_CHECK_LAUNCH("f32_to_16bit_kernel");
}

}  // namespace hetrec::kernels
