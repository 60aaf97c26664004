#include "kernels/cross_net.h"

#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "kernels/column_chunks.cuh"
#include "kernels/launch.h"
#include "kernels/row_vector.cuh"

namespace hetrec::kernels {

namespace {

constexpr int kThreads = 256;

template <class Op>
__global__ void __launch_bounds__(kThreads)
    cross_forward_kernel(const float* __restrict__ x0, const float* __restrict__ x, const Op* __restrict__ z,
                         float* __restrict__ out, Op* __restrict__ out_op, int64_t elements) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (e >= elements) return;
  const float v = fmaf(x0[e], to_float(z[e]), x[e]);
  if (out) out[e] = v;
  if (out_op) out_op[e] = from_float<Op>(v);
}

template <class Op>
struct CrossBackwardPass {
  float* g;
  const Op* h;
  const float* x0;
  const Op* z;
  float* acc;
  bool accumulate;
  float* dx0;
  Op* dz;
  int64_t width;
  __device__ float operator()(int64_t r, int64_t c) const {
    const int64_t e = r * width + c;
    float gv = g[e];
    if (h) {
      gv += to_float(h[e]);
      if (!dx0) g[e] = gv;
    }
    const float d = gv * x0[e];
    dz[e] = from_float<Op>(d);
    const float zv = to_float(z[e]);
    const float direct = accumulate ? fmaf(gv, zv, acc[e]) : gv * zv;
    if (dx0) dx0[e] = direct + gv;
    else acc[e] = direct;
    return d;
  }
};

template <class Op>
void forward_typed(const CrossShape& s, const float* x0, const float* x, const void* z, float* out, void* out_op,
                   gpu::stream_t stream) {
  const int64_t n = s.batch * s.width;
  cross_forward_kernel<Op><<<grid_for(n, kThreads), kThreads, 0, stream>>>(
      x0, x, static_cast<const Op*>(z), out, static_cast<Op*>(out_op), n);
  HETREC_GPU_CHECK_LAUNCH("cross_forward_kernel");
}

template <class Op>
void backward_typed(const CrossShape& s, const CrossBackward& a, void* workspace, std::size_t workspace_bytes,
                    gpu::stream_t stream) {
  const CrossBackwardPass<Op> pass{a.g,   static_cast<const Op*>(a.h), a.x0, static_cast<const Op*>(a.z),
                                   a.acc, a.accumulate,                a.dx0, static_cast<Op*>(a.dz),
                                   s.width};
  run_column_chunks(pass, s.batch, s.width, a.bias_grad, workspace, workspace_bytes, stream, "cross_backward");
}

}  // namespace

void cross_forward(const CrossShape& s, const float* x0, const float* x, const void* z, float* out, void* out_op,
                   DType op_type, gpu::stream_t stream) {
  if (s.batch * s.width == 0) return;
  if (op_type == DType::f32 && out_op) throw InternalError("cross_forward: fp32 mode writes no operand copy");
  switch (op_type) {
    case DType::f32: return forward_typed<float>(s, x0, x, z, out, out_op, stream);
    case DType::bf16: return forward_typed<Bf16Bits>(s, x0, x, z, out, out_op, stream);
    case DType::f16: return forward_typed<F16Bits>(s, x0, x, z, out, out_op, stream);
    default: break;
  }
  throw InternalError("cross_forward: the operand type must be fp32, bf16 or fp16, got " +
                      std::string(dtype_name(op_type)));
}

void cross_backward(const CrossShape& s, const CrossBackward& args, void* workspace, std::size_t workspace_bytes,
                    gpu::stream_t stream) {
  if (!args.g || !args.x0 || !args.z || !args.dz || !args.bias_grad || (!args.dx0 && !args.acc) ||
      (args.accumulate && !args.acc))
    throw InternalError("cross_backward: incomplete arguments");
  switch (args.op_type) {
    case DType::f32: return backward_typed<float>(s, args, workspace, workspace_bytes, stream);
    case DType::bf16: return backward_typed<Bf16Bits>(s, args, workspace, workspace_bytes, stream);
    case DType::f16: return backward_typed<F16Bits>(s, args, workspace, workspace_bytes, stream);
    default: break;
  }
  throw InternalError("cross_backward: the operand type must be fp32, bf16 or fp16, got " +
                      std::string(dtype_name(args.op_type)));
}

}  // namespace hetrec::kernels
