#include "kernels/output_compare.h"

#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/half.h"
#include "gpu/memory.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU; each loops over the array with a grid stride.
constexpr int64_t kMaxBlocks = 4096;

template <class T>
HETREC_HD float load(const T* p, int64_t i);
template <>
HETREC_HD float load<float>(const float* p, int64_t i) { return p[i]; }
template <>
HETREC_HD float load<uint16_t>(const uint16_t* p, int64_t i) { return gpu::bf16_bits_to_f32(p[i]); }

struct F16 {
  uint16_t bits;
};
template <>
HETREC_HD float load<F16>(const F16* p, int64_t i) { return gpu::f16_bits_to_f32(p[i].bits); }

// Non-negative floats order like their bit patterns, so an unsigned atomicMax on the bits
// is a float max.
template <class T>
__global__ void __launch_bounds__(kThreads)
    compare_kernel(const T* __restrict__ x, const T* __restrict__ ref, int64_t n, CompareResult* result) {
  float diff = 0.0f, mag = 0.0f;
  uint32_t bad = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    const float a = load(x, i), r = load(ref, i);
    if (!isfinite(a) || !isfinite(r)) {
      ++bad;
      continue;
    }
    diff = fmaxf(diff, fabsf(a - r));
    mag = fmaxf(mag, fabsf(r));
  }
  atomicMax(reinterpret_cast<unsigned int*>(&result->max_abs_diff), gpu::float_bits(diff));
  atomicMax(reinterpret_cast<unsigned int*>(&result->max_abs_ref), gpu::float_bits(mag));
  if (bad) atomicAdd(&result->nonfinite, bad);
}

}  // namespace

void compare_outputs(DType type, const void* x, const void* ref, int64_t n, CompareResult* result,
                     gpu::stream_t stream) {
  gpu::memset_async(result, 0, sizeof(CompareResult), stream);
  if (n <= 0) return;
  const unsigned blocks = grid_for(n < kMaxBlocks * kThreads ? n : kMaxBlocks * kThreads, kThreads);
  switch (type) {
    case DType::f32:
      compare_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<const float*>(ref), n,
                                                      result);
      break;
    case DType::bf16:
      compare_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint16_t*>(x),
                                                      static_cast<const uint16_t*>(ref), n, result);
      break;
    case DType::f16:
      compare_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const F16*>(x), static_cast<const F16*>(ref), n,
                                                      result);
      break;
    default: throw InternalError("compare_outputs: unsupported type " + std::string(dtype_name(type)));
  }
  HETREC_GPU_CHECK_LAUNCH("compare_kernel");
}

}  // namespace hetrec::kernels
