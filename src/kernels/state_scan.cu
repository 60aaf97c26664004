#include "kernels/state_scan.h"

#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "kernels/launch.h"
#include "kernels/row_vector.cuh"

namespace hetrec::kernels {

namespace {

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU; each loops over the array with a grid stride.
constexpr int64_t kMaxBlocks = 4096;

__global__ void set_kernel(int64_t* first, int64_t n) { *first = n; }

// Each thread visits its indices in increasing order, so its first failing element is its
// lowest; the minimum over threads is the array's.
template <class T>
__global__ void __launch_bounds__(kThreads)
    scan_kernel(const T* __restrict__ x, int64_t n, float bound, int64_t* first) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    const float v = to_float(x[i]);
    if (!isfinite(v) || fabsf(v) > bound) {
      atomicMin(reinterpret_cast<unsigned long long*>(first), static_cast<unsigned long long>(i));
      return;
    }
  }
}

template <class T>
void launch(const void* x, int64_t n, float bound, int64_t* first, unsigned blocks, gpu::stream_t stream) {
  scan_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(x), n, bound, first);
}

}  // namespace

void find_first_out_of_bound(DType type, const void* x, int64_t n, float bound, int64_t* first,
                             gpu::stream_t stream) {
  if (type != DType::f32 && type != DType::bf16 && type != DType::f16)
    throw InternalError("find_first_out_of_bound: unsupported type " + std::string(dtype_name(type)));
  set_kernel<<<1, 1, 0, stream>>>(first, n < 0 ? 0 : n);
  HETREC_GPU_CHECK_LAUNCH("state_scan set_kernel");
  if (n <= 0) return;
  const unsigned blocks = grid_for(n < kMaxBlocks * kThreads ? n : kMaxBlocks * kThreads, kThreads);
  if (type == DType::f32) launch<float>(x, n, bound, first, blocks, stream);
  else if (type == DType::bf16) launch<Bf16Bits>(x, n, bound, first, blocks, stream);
  else launch<F16Bits>(x, n, bound, first, blocks, stream);
  HETREC_GPU_CHECK_LAUNCH("state_scan scan_kernel");
}

}  // namespace hetrec::kernels
