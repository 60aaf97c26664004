#include "kernels/column_sum.h"

#include <string>

#include "core/error.h"
#include "kernels/column_chunks.cuh"
#include "kernels/row_vector.cuh"

namespace hetrec::kernels {

namespace {

struct ColumnValue {
  const float* m;
  int64_t ld;
  __device__ float operator()(int64_t r, int64_t c) const { return m[r * ld + c]; }
};

// dz = dy masked by y > 0 (dz may alias dy: no restrict).
template <class Y, class Z>
struct ReluBackward {
  const float* dy;
  int64_t ld_dy;
  const Y* y;
  int64_t ld_y;
  Z* dz;
  int64_t ld_dz;
  __device__ float operator()(int64_t r, int64_t c) const {
    const float v = to_float(y[r * ld_y + c]) > 0.0f ? dy[r * ld_dy + c] : 0.0f;
    dz[r * ld_dz + c] = from_float<Z>(v);
    return v;
  }
};

template <class Y, class Z>
void relu_backward_typed(const float* dy, int64_t ld_dy, const TypedMatrix& y, const TypedMatrix& dz, int64_t rows,
                         int64_t cols, float* sums, void* workspace, std::size_t workspace_bytes,
                         gpu::stream_t stream) {
  const ReluBackward<Y, Z> op{dy, ld_dy, static_cast<const Y*>(y.data), y.ld, static_cast<Z*>(dz.data), dz.ld};
  run_column_chunks(op, rows, cols, sums, workspace, workspace_bytes, stream, "relu_backward_column_sum");
}

template <class Y>
void dispatch_dz(const float* dy, int64_t ld_dy, const TypedMatrix& y, const TypedMatrix& dz, int64_t rows,
                 int64_t cols, float* sums, void* workspace, std::size_t workspace_bytes, gpu::stream_t stream) {
  switch (dz.dtype) {
    case DType::f32:
      return relu_backward_typed<Y, float>(dy, ld_dy, y, dz, rows, cols, sums, workspace, workspace_bytes, stream);
    case DType::bf16:
      return relu_backward_typed<Y, Bf16Bits>(dy, ld_dy, y, dz, rows, cols, sums, workspace, workspace_bytes, stream);
    case DType::f16:
      return relu_backward_typed<Y, F16Bits>(dy, ld_dy, y, dz, rows, cols, sums, workspace, workspace_bytes, stream);
    default:
      throw InternalError("relu_backward_column_sum: dz must be fp32, bf16 or fp16, got " +
                          std::string(dtype_name(dz.dtype)));
  }
}

}  // namespace

void column_sum(const float* m, int64_t rows, int64_t cols, int64_t ld, float* sums, void* workspace,
                std::size_t workspace_bytes, gpu::stream_t stream) {
  run_column_chunks(ColumnValue{m, ld}, rows, cols, sums, workspace, workspace_bytes, stream, "column_sum");
}

void relu_backward_column_sum(const float* dy, const float* y, float* dz, int64_t rows, int64_t cols, int64_t ld,
                              float* sums, void* workspace, std::size_t workspace_bytes, gpu::stream_t stream) {
  relu_backward_column_sum(dy, ld, TypedMatrix{const_cast<float*>(y), DType::f32, ld}, TypedMatrix{dz, DType::f32, ld},
                           rows, cols, sums, workspace, workspace_bytes, stream);
}

void relu_backward_column_sum(const float* dy, int64_t ld_dy, const TypedMatrix& y, const TypedMatrix& dz,
                              int64_t rows, int64_t cols, float* sums, void* workspace, std::size_t workspace_bytes,
                              gpu::stream_t stream) {
  switch (y.dtype) {
    case DType::f32:
      return dispatch_dz<float>(dy, ld_dy, y, dz, rows, cols, sums, workspace, workspace_bytes, stream);
    case DType::bf16:
      return dispatch_dz<Bf16Bits>(dy, ld_dy, y, dz, rows, cols, sums, workspace, workspace_bytes, stream);
    case DType::f16:
      return dispatch_dz<F16Bits>(dy, ld_dy, y, dz, rows, cols, sums, workspace, workspace_bytes, stream);
    default:
      throw InternalError("relu_backward_column_sum: y must be fp32, bf16 or fp16, got " +
                          std::string(dtype_name(y.dtype)));
  }
}

}  // namespace hetrec::kernels
