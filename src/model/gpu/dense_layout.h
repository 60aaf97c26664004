#pragma once
// How the GPU model lays its dense parameters out in the flat parameter, gradient and
// optimizer-slot buffers (model/gpu/dense_parameters.*): every tensor starts on a
// 64-float boundary. Plain C++ (constexpr), for DenseParameters and for the planner
// (plan/gpu_model_layout.cpp), which counts the buffers without a device.
#include <cstdint>

namespace hetrec::inline model::gpu_model {

// 64 floats = 256 bytes: the operand alignment cuBLASLt's fastest kernels assume.
inline constexpr int64_t kDenseAlignElements = 64;

// Elements a tensor of `numel` values takes in the flat buffers (the next one starts there).
constexpr int64_t dense_padded_elements(int64_t numel) {
  return (numel + kDenseAlignElements - 1) / kDenseAlignElements * kDenseAlignElements;
}

// Elements of the flat buffers whose tensors' padded elements add up to `padded`: never
// empty, so a model without dense parameters still has one aligned block.
constexpr int64_t dense_flat_elements(int64_t padded) { return padded > 0 ? padded : kDenseAlignElements; }

}  // namespace hetrec::model::gpu_model
