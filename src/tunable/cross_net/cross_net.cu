#include "tunable/cross_net/cross_net.h"

#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "kernels/column_chunks.cuh"
#include "tunable/cross_net/cross_net_kernel.cuh"
#include "tunable/cross_net/cross_net_tuned.h"
#include "tunable/cross_net/cross_net_variant.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

// The built-in variants (tunable/cross_net/cross_net_variant.h): one element per thread in blocks
// of 256 for the forward; for the backward one thread per column walking chunks of
// kColumnChunkRows rows (kernels/column_chunks.cuh's geometry and summation order).
constexpr CrossForwardVariant kForward = kDefaultCrossForwardVariant;
constexpr CrossBackwardVariant kBackward = kDefaultCrossBackwardVariant;
static_assert(kForward.vec == 1, "the built-in forward reads one element at a time: no alignment to check");
static_assert(kBackward.vec == 1 && kBackward.chunk_rows == kColumnChunkRows,
              "the built-in backward keeps column_chunks.cuh's geometry and needs no alignment");

template <class Op>
void forward_typed(const CrossShape& s, const float* x0, const float* x, const void* z, float* out, void* out_op,
                   gpu::stream_t stream) {
  const int64_t n = s.batch * s.width;
  constexpr int64_t kPerBlock = static_cast<int64_t>(kForward.block_threads) * kForward.items * kForward.vec;
  cross_forward_kernel<Op, kForward.vec, kForward.items, kForward.block_threads>
      <<<grid_for(n, kPerBlock), kForward.block_threads, 0, stream>>>(x0, x, static_cast<const Op*>(z), out,
                                                                      static_cast<Op*>(out_op), n, true);
  HETREC_GPU_CHECK_LAUNCH("cross_forward_kernel");
}

template <class Op>
void backward_typed(const CrossShape& s, const CrossBackward& a, void* workspace, std::size_t workspace_bytes,
                    gpu::stream_t stream) {
  if (s.width == 0) return;
  const int64_t chunks = column_chunk_count(s.batch);
  const std::size_t needed = static_cast<std::size_t>(chunks * s.width) * sizeof(float);
  if (workspace_bytes < needed)
    throw InternalError("cross_backward: workspace of " + std::to_string(workspace_bytes) + " bytes, need " +
                        std::to_string(needed));
  auto* partial = static_cast<float*>(workspace);
  if (chunks > 0) {
    if (chunks > kMaxCrossChunks) throw InternalError("cross_backward: too many rows (" + std::to_string(s.batch) + ")");
    const dim3 grid(grid_for(s.width, static_cast<int64_t>(kBackward.col_threads) * kBackward.vec),
                    static_cast<unsigned>(chunks));
    cross_backward_chunk_kernel<Op, kBackward.vec, kBackward.col_threads, kBackward.row_groups, kBackward.chunk_rows>
        <<<grid, kBackward.block_threads(), 0, stream>>>(
            a.g, static_cast<const Op*>(a.h[0]), static_cast<const Op*>(a.h[1]), static_cast<const Op*>(a.h[2]),
            a.terms, a.x0, static_cast<const Op*>(a.z[0]), static_cast<const Op*>(a.z[1]),
            static_cast<const Op*>(a.z[2]), static_cast<const Op*>(a.z[3]), a.direct_terms, a.direct_first, a.acc,
            a.accumulate, a.checkpoint, a.dx0, static_cast<Op*>(a.dz), s.batch, s.width, partial, true);
    HETREC_GPU_CHECK_LAUNCH("cross_backward_chunk_kernel");
  }
  cross_combine_column_chunks(partial, chunks, s.width, a.bias_grad, stream);
}

}  // namespace

void cross_forward(const CrossShape& s, const float* x0, const float* x, const void* z, float* out, void* out_op,
                   DType op_type, gpu::stream_t stream, const TunedCrossForward* tuned) {
  if (s.batch * s.width == 0) return;
  if (op_type == DType::f32 && out_op) throw InternalError("cross_forward: fp32 mode writes no operand copy");
  if (tuned) return tuned->launch(s, x0, x, z, out, out_op, op_type, stream);
  switch (op_type) {
    case DType::f32: return forward_typed<float>(s, x0, x, z, out, out_op, stream);
    case DType::bf16: return forward_typed<Bf16Bits>(s, x0, x, z, out, out_op, stream);
    case DType::f16: return forward_typed<F16Bits>(s, x0, x, z, out, out_op, stream);
    default: break;
  }
  throw InternalError("cross_forward: the operand type must be fp32, bf16 or fp16, got " +
                      std::string(dtype_name(op_type)));
}

static_assert(kMaxCrossTerms == 3, "cross_backward_chunk_kernel takes three chain terms and four z's");

void check_cross_backward_args(const CrossBackward& a) {
  const auto missing = [](const void* const* p, int n) {
    for (int i = 0; i < n; ++i)
      if (!p[i]) return true;
    return false;
  };
  const bool counts = a.terms >= 0 && a.terms <= kMaxCrossTerms && a.direct_first >= 0 && a.direct_first <= 1 &&
                      a.direct_terms >= 0 && a.direct_terms + a.direct_first <= a.terms + 1;
  if (!counts) throw InternalError("cross_backward: bad term counts");
  const bool writes_direct = a.checkpoint || a.dx0;
  if (!a.g || !a.x0 || !a.dz || !a.bias_grad || missing(a.h, a.terms) || missing(a.z, a.direct_terms) ||
      (a.checkpoint && a.dx0) || ((a.accumulate || a.checkpoint) && !a.acc) ||
      ((a.accumulate || a.direct_terms > 0) && !writes_direct) || (a.dx0 && !a.accumulate && a.direct_terms == 0))
    throw InternalError("cross_backward: incomplete arguments");
}

void cross_backward(const CrossShape& s, const CrossBackward& args, void* workspace, std::size_t workspace_bytes,
                    gpu::stream_t stream, const TunedCrossBackward* tuned) {
  check_cross_backward_args(args);
  if (tuned) return tuned->launch(s, args, workspace, workspace_bytes, stream);
  switch (args.op_type) {
    case DType::f32: return backward_typed<float>(s, args, workspace, workspace_bytes, stream);
    case DType::bf16: return backward_typed<Bf16Bits>(s, args, workspace, workspace_bytes, stream);
    case DType::f16: return backward_typed<F16Bits>(s, args, workspace, workspace_bytes, stream);
    default: break;
  }
  throw InternalError("cross_backward: the operand type must be fp32, bf16 or fp16, got " +
                      std::string(dtype_name(args.op_type)));
}

void cross_combine_column_chunks(const float* partial, int64_t chunks, int64_t cols, float* sums,
                                 gpu::stream_t stream) {
  if (cols == 0) return;
  combine_column_chunks_kernel<<<grid_for(cols, kColumnChunkThreads), kColumnChunkThreads, 0, stream>>>(
      partial, chunks, cols, sums);
  HETREC_GPU_CHECK_LAUNCH("combine_column_chunks_kernel");
}

}  // namespace hetrec::kernels
