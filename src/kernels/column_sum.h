#pragma once
// Column sums of a rows x cols matrix (bias gradients), optionally fused with the ReLU
// backward. Deterministic: each column is summed in fixed row chunks, then the chunk
// partials in chunk order, whatever the launch configuration (kernels/column_chunks.cuh).
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "gpu/platform.h"
#include "kernels/column_sum_geometry.h"  // column_sum_workspace_bytes

namespace hetrec::kernels {

// sums[c] = sum_r m[r * ld + c].
void column_sum(const float* m, int64_t rows, int64_t cols, int64_t ld, float* sums, void* workspace,
                std::size_t workspace_bytes, gpu::stream_t stream);

// The backward of y = relu(z) followed by the bias gradient: dz = dy where y > 0, else 0
// (written to dz, which may alias dy; all three share the leading dimension ld), and
// sums[c] = sum_r dz[r][c].
void relu_backward_column_sum(const float* dy, const float* y, float* dz, int64_t rows, int64_t cols, int64_t ld,
                              float* sums, void* workspace, std::size_t workspace_bytes, gpu::stream_t stream);

// A row-major matrix of fp32, bf16 or fp16 elements (16-bit ones as bit patterns).
struct TypedMatrix {
  void* data = nullptr;
  DType dtype = DType::f32;
  int64_t ld = 0;
};

// The same backward for the 16-bit dense path: y may be the 16-bit copy the forward's
// GEMM wrote (a ReLU output keeps its sign when rounded), and dz is written in dz.dtype
// (the next GEMMs' operand type; dz must not alias dy unless both are fp32 with one
// leading dimension). The sums are of the fp32 values before any rounding.
void relu_backward_column_sum(const float* dy, int64_t ld_dy, const TypedMatrix& y, const TypedMatrix& dz,
                              int64_t rows, int64_t cols, float* sums, void* workspace, std::size_t workspace_bytes,
                              gpu::stream_t stream);

}  // namespace hetrec::kernels
