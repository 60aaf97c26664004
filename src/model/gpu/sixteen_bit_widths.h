#pragma once
// Which dense layers run 16-bit GEMMs under 16-bit dense compute (model/gpu/gpu_mlp.cpp,
// gpu_cross_net.cpp): those whose widths are multiples of kSixteenBitWidthMultiple.
// Plain C++ (constexpr), for the layers and for the planner (plan/gpu_model_layout.h,
// plan/step_work_builder.h).
namespace hetrec::inline model::gpu_model {

// 16-bit GEMM operands need widths that are multiples of this (16-byte leading
// dimensions for cuBLASLt's tensor-core kernels); other layers keep fp32 operands and run
// TF32 or fp32 GEMMs (model.unaligned_gemms, model/model_config.h).
inline constexpr int kSixteenBitWidthMultiple = 8;

constexpr bool sixteen_bit_widths(int a, int b) {
  return a % kSixteenBitWidthMultiple == 0 && b % kSixteenBitWidthMultiple == 0;
}

}  // namespace hetrec::model::gpu_model
