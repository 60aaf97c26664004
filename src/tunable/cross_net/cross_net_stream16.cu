// The cross layer's forward pass over a 16-bit residual stream (tunable/cross_net/cross_net.h,
// cross_forward_16bit_stream): one thread per vector of 8 elements, 16-byte accesses of
// every 16-bit operand.
#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "tunable/cross_net/cross_net.h"
#include "kernels/launch.h"
#include "kernels/row_vector.cuh"

namespace hetrec::kernels {

namespace {

constexpr int kVec = 8;             // 16 bytes of a 16-bit operand
constexpr int kBlockThreads = 256;  // the built-in element-wise block (tunable/cross_net/cross_net_variant.h)

template <class Op>
__device__ inline void stream16_element(const Op* __restrict__ x0, const Op* __restrict__ x, const Op* __restrict__ z,
                                        float* __restrict__ out, Op* __restrict__ out_op, int64_t e) {
  const float v = fmaf(to_float(x0[e]), to_float(z[e]), to_float(x[e]));
  if (out) out[e] = v;
  if (out_op) out_op[e] = from_float<Op>(v);
}

// Thread t covers vector t (elements [8t, 8t + 8)); without 16-byte alignment of every
// operand, the same elements one by one. The first block also does the elements past the
// last whole vector.
template <class Op>
__global__ void __launch_bounds__(kBlockThreads)
    cross_forward_stream16_kernel(const Op* __restrict__ x0, const Op* __restrict__ x, const Op* __restrict__ z,
                                  float* __restrict__ out, Op* __restrict__ out_op, int64_t elements,
                                  bool vector_ok) {
  const int64_t v = static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x;
  const int64_t vectors = elements / kVec;
  if (v < vectors) {
    const int64_t e = v * kVec;
    if (vector_ok) {
      float a[kVec], b[kVec], c[kVec];
      load_vec<kVec>(x0 + e, a);
      load_vec<kVec>(z + e, c);
      load_vec<kVec>(x + e, b);
#pragma unroll
      for (int k = 0; k < kVec; ++k) a[k] = fmaf(a[k], c[k], b[k]);
      if (out) store_vec<kVec>(out + e, a);
      if (out_op) store_vec<kVec>(out_op + e, a);
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) stream16_element(x0, x, z, out, out_op, e + k);
    }
  }
  const int64_t tail = vectors * kVec;
  if (blockIdx.x == 0 && threadIdx.x < elements - tail) stream16_element(x0, x, z, out, out_op, tail + threadIdx.x);
}

bool aligned16(const void* p) { return !p || reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }
bool aligned32(const void* p) { return !p || reinterpret_cast<std::uintptr_t>(p) % 32 == 0; }

template <class Op>
void launch(const CrossShape& s, const void* x0, const void* x, const void* z, float* out, void* out_op,
            gpu::stream_t stream) {
  const int64_t n = s.batch * s.width;
  const bool vector_ok = aligned16(x0) && aligned16(x) && aligned16(z) && aligned16(out_op) && aligned32(out);
  cross_forward_stream16_kernel<Op><<<grid_for(n / kVec + 1, kBlockThreads), kBlockThreads, 0, stream>>>(
      static_cast<const Op*>(x0), static_cast<const Op*>(x), static_cast<const Op*>(z), out, static_cast<Op*>(out_op),
      n, vector_ok);
  HETREC_GPU_CHECK_LAUNCH("cross_forward_stream16_kernel");
}

}  // namespace

void cross_forward_16bit_stream(const CrossShape& s, const void* x0, const void* x, const void* z, float* out,
                                void* out_op, DType op_type, gpu::stream_t stream) {
  if (s.batch * s.width == 0) return;
  if (!x0 || !x || !z || (!out && !out_op)) throw InternalError("cross_forward_16bit_stream: incomplete arguments");
  switch (op_type) {
    case DType::bf16: return launch<Bf16Bits>(s, x0, x, z, out, out_op, stream);
    case DType::f16: return launch<F16Bits>(s, x0, x, z, out, out_op, stream);
    default: break;
  }
  throw InternalError("cross_forward_16bit_stream: the stream must be bf16 or fp16, got " +
                      std::string(dtype_name(op_type)));
}

}  // namespace hetrec::kernels
