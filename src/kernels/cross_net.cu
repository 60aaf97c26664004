#include "kernels/cross_net.h"

#include "gpu/check.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    cross_forward_kernel(const float* __restrict__ x0, int64_t x0_stride, const float* __restrict__ x,
                         int64_t x_stride, const float* __restrict__ z, float* __restrict__ out, int64_t out_stride,
                         int64_t batch, int64_t width) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (e >= batch * width) return;
  const int64_t b = e / width;
  const int64_t c = e - b * width;
  out[b * out_stride + c] = fmaf(x0[b * x0_stride + c], z[e], x[b * x_stride + c]);
}

__global__ void __launch_bounds__(kThreads)
    cross_backward_kernel(const float* __restrict__ g, int64_t g_stride, const float* __restrict__ x0,
                          int64_t x0_stride, const float* __restrict__ z, float* __restrict__ dz,
                          float* __restrict__ dx0, int64_t dx0_stride, int64_t batch, int64_t width, bool accumulate) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (e >= batch * width) return;
  const int64_t b = e / width;
  const int64_t c = e - b * width;
  const float gv = g[b * g_stride + c];
  dz[e] = gv * x0[b * x0_stride + c];
  float* d = dx0 + b * dx0_stride + c;
  *d = accumulate ? fmaf(gv, z[e], *d) : gv * z[e];
}

__global__ void __launch_bounds__(kThreads)
    add_kernel(const float* __restrict__ a, int64_t a_stride, const float* __restrict__ b, int64_t b_stride,
               float* __restrict__ out, int64_t out_stride, int64_t batch, int64_t width) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (e >= batch * width) return;
  const int64_t r = e / width;
  const int64_t c = e - r * width;
  const float v = a[r * a_stride + c];
  out[r * out_stride + c] = b ? v + b[r * b_stride + c] : v;
}

}  // namespace

void add_matrices(const CrossShape& s, const float* a, int64_t a_stride, const float* b, int64_t b_stride,
                  float* out, int64_t out_stride, gpu::stream_t stream) {
  const int64_t n = s.batch * s.width;
  if (n == 0) return;
  add_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(a, a_stride, b, b_stride, out, out_stride, s.batch,
                                                            s.width);
  HETREC_GPU_CHECK_LAUNCH("add_kernel");
}

void cross_forward(const CrossShape& s, const float* x0, int64_t x0_stride, const float* x, int64_t x_stride,
                   const float* z, float* out, int64_t out_stride, gpu::stream_t stream) {
  const int64_t n = s.batch * s.width;
  if (n == 0) return;
  cross_forward_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(x0, x0_stride, x, x_stride, z, out, out_stride,
                                                                      s.batch, s.width);
  HETREC_GPU_CHECK_LAUNCH("cross_forward_kernel");
}

void cross_backward(const CrossShape& s, const float* g, int64_t g_stride, const float* x0, int64_t x0_stride,
                    const float* z, float* dz, float* dx0, int64_t dx0_stride, bool accumulate,
                    gpu::stream_t stream) {
  const int64_t n = s.batch * s.width;
  if (n == 0) return;
  cross_backward_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(g, g_stride, x0, x0_stride, z, dz, dx0,
                                                                       dx0_stride, s.batch, s.width, accumulate);
  HETREC_GPU_CHECK_LAUNCH("cross_backward_kernel");
}

}  // namespace hetrec::kernels
