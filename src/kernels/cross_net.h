#pragma once
// The element-wise parts of a DCNv2 cross layer, x_{l+1} = x0 * z_l + x_l with
// z_l = W_l x_l + b_l (its GEMMs, bias included, run through cuBLASLt). All matrices are
// batch x width, row-major with the given row strides.
#include <cstdint>

#include "gpu/platform.h"

namespace hetrec::kernels {

struct CrossShape {
  int64_t batch = 0;
  int64_t width = 0;
};

// out = x0 * z + x.
void cross_forward(const CrossShape& s, const float* x0, int64_t x0_stride, const float* x, int64_t x_stride,
                   const float* z, float* out, int64_t out_stride, gpu::stream_t stream);

// From g = dL/dx_{l+1}: dz = g * x0 (the gradient of z_l, written), and the direct part
// of dL/dx0: dx0 = g * z (accumulate = false) or dx0 += g * z (accumulate = true).
// z and dz are batch x width contiguous; g and dx0 use the given strides.
void cross_backward(const CrossShape& s, const float* g, int64_t g_stride, const float* x0, int64_t x0_stride,
                    const float* z, float* dz, float* dx0, int64_t dx0_stride, bool accumulate,
                    gpu::stream_t stream);

// out = a + b (b may be null: out = a). Used to combine the chain and direct gradients of
// the cross net's input.
void add_matrices(const CrossShape& s, const float* a, int64_t a_stride, const float* b, int64_t b_stride,
                  float* out, int64_t out_stride, gpu::stream_t stream);

}  // namespace hetrec::kernels
