#pragma once
// The element-wise parts of a DCNv2 cross layer, x_{l+1} = x0 * z_l + x_l with
// z_l = W_l x_l + b_l (its GEMMs, bias included, run through cuBLASLt). All matrices are
// batch x width, row-major and contiguous. Each part is one pass that also writes the
// next GEMM's operand (fp32, or a bf16/fp16 copy), so no separate rounding pass reads
// the fp32 values again.
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "gpu/platform.h"
#include "tunable/cross_net/cross_backward_schedule.h"

namespace hetrec::kernels {

struct CrossShape {
  int64_t batch = 0;
  int64_t width = 0;
};

// v = x0 * z + x; out = v (fp32, skipped when null) and out_op = v in op_type (skipped
// when null). z is in op_type: fp32, or bf16/fp16 bit patterns in 16-bit mode, where the
// GEMM that makes z writes it in 16 bits as an autocast Linear does.
// With `tuned`, that variant (tunable/cross_net/cross_net_tuned.h) runs instead of the built-in one.
class TunedCrossForward;
void cross_forward(const CrossShape& s, const float* x0, const float* x, const void* z, float* out, void* out_op,
                   DType op_type, gpu::stream_t stream, const TunedCrossForward* tuned = nullptr);

// The 16-bit residual stream (model.cross_residual = "16bit"): x0, x and z are all in
// op_type (bf16 or fp16), v = x0 * z + x is formed in fp32 and written rounded to out_op,
// and in fp32 to out when out is given (tunable/cross_net/cross_net_stream16.cu). Half the bytes of
// cross_forward: no fp32 copy of the stream is read or written.
void cross_forward_16bit_stream(const CrossShape& s, const void* x0, const void* x, const void* z, float* out,
                                void* out_op, DType op_type, gpu::stream_t stream);

// One pass of the backward (tunable/cross_net/cross_backward_schedule.h, whose
// CrossBackwardPass says which operands a layer's pass takes): with G^(0) = g and
// G^(s+1) = G^(s) + h[s] for s < terms, G = G^(terms) (the chain gradient of the layer's
// output);
//   dz = G * x0, written in op_type (the GEMMs' operand), and bias_grad = sum over the
//   batch of the fp32 dz;
//   the direct part of dL/dx0: (acc when accumulate) + sum_j z[j] * G^(j + direct_first)
//   over the direct_terms z's;
//   a checkpoint writes g = G and acc = the direct part; the bottom pass writes
//   dx0 = the direct part + G (its last GEMM then adds its term through x_0).
// h, z and dz are in op_type (the GEMMs write z and h in it); g, x0, acc and dx0 are fp32.
struct CrossBackward {
  float* g = nullptr;
  const void* h[kMaxCrossTerms] = {};
  int terms = 0;
  const float* x0 = nullptr;
  const void* z[kMaxCrossTerms + 1] = {};
  int direct_terms = 0;
  int direct_first = 0;
  float* acc = nullptr;
  bool accumulate = false;
  bool checkpoint = false;
  float* dx0 = nullptr;  // set for the bottom pass only
  void* dz = nullptr;
  DType op_type = DType::f32;
  float* bias_grad = nullptr;
};
// The workspace holds the bias gradient's chunk partials (kernels/column_sum.h's
// column_sum_workspace_bytes(batch, width) is enough for every variant). With `tuned`,
// that variant (tunable/cross_net/cross_net_tuned.h) runs instead of the built-in one.
class TunedCrossBackward;
void cross_backward(const CrossShape& s, const CrossBackward& args, void* workspace, std::size_t workspace_bytes,
                    gpu::stream_t stream, const TunedCrossBackward* tuned = nullptr);

// Throws InternalError when `args` misses what its mode needs.
void check_cross_backward_args(const CrossBackward& args);

// sums[c] = the `chunks` chunk partials of column c (partial[k * cols + c]), added in
// chunk order: the backward's second step, shared by the run-time compiled variants.
void cross_combine_column_chunks(const float* partial, int64_t chunks, int64_t cols, float* sums,
                                 gpu::stream_t stream);

}  // namespace hetrec::kernels
