#pragma once
// fp32 -> bf16 or fp16 copies (round to nearest even) of row-major matrices: the 16-bit
// operands of the 16-bit GEMMs, made from the fp32 activations and gradients the
// element-wise kernels produce. Bit-identical to core/dtype.h's f32_to_bf16 / f32_to_f16
// (fp16: values beyond the largest finite one become infinities, which the loss-scale
// check then sees).
#include <cstdint>

#include "core/dtype.h"
#include "gpu/platform.h"

namespace hetrec::kernels {

// out[r * ld_out + c] = to(in[r * ld_in + c]) for r < rows, c < cols, as 16-bit patterns
// of `to` (DType::bf16 or DType::f16). Nothing else of `out` is written.
void f32_to_16bit_matrix(const float* in, int64_t ld_in, uint16_t* out, int64_t ld_out, int64_t rows, int64_t cols,
                         DType to, gpu::stream_t stream);

// out[i] = the exact fp32 value of the 16-bit pattern in[i] of type `from` (bf16 or fp16),
// i < n: e.g. a bias gradient that cuBLASLt's epilogue wrote in D's 16-bit type.
void widen_16bit(const uint16_t* in, float* out, int64_t n, DType from, gpu::stream_t stream);

}  // namespace hetrec::kernels
