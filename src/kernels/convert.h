#pragma once
// fp32 -> bf16 copies (round to nearest even) of row-major matrices: the bf16 operands
// of the bf16 GEMMs, made from the fp32 activations and gradients the element-wise
// kernels produce. Bit-identical to core/dtype.h's f32_to_bf16.
#include <cstdint>

#include "gpu/platform.h"

namespace hetrec::kernels {

// out[r * ld_out + c] = bf16(in[r * ld_in + c]) for r < rows, c < cols (bf16 stored as
// 16-bit patterns). Nothing else of `out` is written.
void f32_to_bf16_matrix(const float* in, int64_t ld_in, uint16_t* out, int64_t ld_out, int64_t rows, int64_t cols,
                        gpu::stream_t stream);

}  // namespace hetrec::kernels
