#pragma once
// The ReLU's backward applied in place to a 16-bit gradient: dz[r, c] becomes +0 where the
// layer's 16-bit forward output y[r, c] is not positive (zero, negative or NaN) and stays
// as it is elsewhere. With model.relu_backward = "mask_pass" the input-gradient GEMM writes
// dz without an epilogue and this pass is the ReLU between it and the two GEMMs that read
// dz (model/gpu/relu_mask_fusion.h).
#include <cstdint>

#include "core/dtype.h"
#include "gpu/platform.h"

namespace hetrec::kernels {

// dz and y hold 16-bit patterns of `type` (DType::bf16 or DType::f16), rows x cols,
// row-major with leading dimensions ld_dz and ld_y (>= cols). Nothing outside the
// rows x cols block of dz is written.
void relu_mask_16bit(uint16_t* dz, int64_t ld_dz, const uint16_t* y, int64_t ld_y, int64_t rows, int64_t cols,
                     DType type, gpu::stream_t stream);

}  // namespace hetrec::kernels
