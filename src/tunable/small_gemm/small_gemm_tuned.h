#pragma once
// A variant of the small-GEMM kernels (tunable/small_gemm/small_gemm_kernel.cuh) compiled at run
// time for one shape: the tuner's candidates and the tuned winner the engine loads.
#include <cstdint>
#include <optional>
#include <string>

#include "gpu/platform.h"
#include "gpu/rtc.h"
#include "tunable/small_gemm/small_gemm_variant.h"

namespace hetrec::kernels {

// The program that instantiates `variant` for `shape` (the reduce kind's first pass; its
// second pass is small_gemm_finish_program). A non-empty `kernel_header` replaces the text
// of tunable/small_gemm/small_gemm_kernel.cuh.
gpu::RtcProgram small_gemm_program(const SmallGemmShape& shape, const SmallGemmVariant& variant,
                                   const std::string& kernel_header = "");
gpu::RtcProgram small_gemm_finish_program(const std::string& kernel_header = "");

// The operands of one call, row-major with row strides in elements.
//  rows, outer: C[m, N] = A[m, K] op(B) (+ bias[N], ReLU per the shape's epilogue).
//  reduce: a = the narrow operand X[m, narrow], b = the wide operand Y[m, wide];
//          C = X^T Y (shape.flag) or Y^T X; `workspace` holds
//          small_gemm_workspace_floats(shape, variant) floats.
struct SmallGemmArgs {
  int64_t m = 0;
  const void* a = nullptr;
  int64_t lda = 0;
  const void* b = nullptr;
  int64_t ldb = 0;
  float* c = nullptr;
  int64_t ldc = 0;
  const float* bias = nullptr;
  float* workspace = nullptr;
};

class TunedSmallGemm {
 public:
  // Compiles for compute capability major.minor and loads on the current device; throws
  // DeviceError with the compiler's log when the program does not compile.
  TunedSmallGemm(const SmallGemmShape& shape, const SmallGemmVariant& variant, int compute_major, int compute_minor,
                 const std::string& kernel_header = "");
  // `finish` is the reduce kind's second pass (ignored by the other kinds).
  TunedSmallGemm(const SmallGemmShape& shape, const SmallGemmVariant& variant, const gpu::RtcBinary& binary,
                 const gpu::RtcBinary& finish);

  const SmallGemmShape& shape() const { return shape_; }
  const SmallGemmVariant& variant() const { return variant_; }
  gpu::KernelResources resources() const { return kernel_.resources(); }
  std::size_t workspace_floats() const { return small_gemm_workspace_floats(shape_, variant_); }
  // Whether the compiled kernel can launch its blocks: its registers per thread allow the
  // variant's block size (only a compile tells).
  bool launchable() const { return resources().max_threads_per_block >= small_gemm_block_threads(shape_, variant_); }

  // Throws InternalError when the strides or pointers are not aligned for the variant's
  // vectors or a needed pointer is missing.
  void launch(const SmallGemmArgs& args, gpu::stream_t stream) const;

 private:
  SmallGemmShape shape_;
  SmallGemmVariant variant_;
  gpu::RtcKernel kernel_;
  std::optional<gpu::RtcKernel> finish_;  // the reduce kind's second pass
  int persistent_blocks_ = 0;  // resident blocks on the whole device: the grid-stride kernels' grid cap
};

}  // namespace hetrec::kernels
