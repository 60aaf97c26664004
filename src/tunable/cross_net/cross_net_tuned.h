#pragma once
// Variants of the cross net's element-wise passes other than the built-in ones, compiled
// at run time from the same source (tunable/cross_net/cross_net_kernel.cuh): the tuner's candidates
// and the tuned winners the engine loads.
#include <cstddef>
#include <cstdint>
#include <string>

#include "gpu/rtc.h"
#include "tunable/cross_net/cross_net.h"
#include "tunable/cross_net/cross_net_variant.h"

namespace hetrec::kernels {

inline constexpr const char* kCrossNetKernelHeader = "tunable/cross_net/cross_net_kernel.cuh";

// The programs that instantiate a variant. A non-empty `kernel_header` replaces the text
// of tunable/cross_net/cross_net_kernel.cuh.
gpu::RtcProgram cross_forward_program(const CrossNetShape& s, const CrossForwardVariant& v,
                                      const std::string& kernel_header = "");
gpu::RtcProgram cross_backward_program(const CrossNetShape& s, const CrossBackwardVariant& v,
                                       const std::string& kernel_header = "");

class TunedCrossForward {
 public:
  // Compiles for compute capability major.minor and loads on the current device; throws
  // DeviceError with the compiler's log when the program does not compile.
  TunedCrossForward(const CrossNetShape& shape, const CrossForwardVariant& variant, int compute_major,
                    int compute_minor, const std::string& kernel_header = "");
  TunedCrossForward(const CrossNetShape& shape, const CrossForwardVariant& variant, const gpu::RtcBinary& binary);

  const CrossNetShape& shape() const { return shape_; }
  const CrossForwardVariant& variant() const { return variant_; }
  gpu::KernelResources resources() const { return kernel_.resources(); }

  // Same contract as cross_forward; throws InternalError for another width or operand type.
  void launch(const CrossShape& s, const float* x0, const float* x, const void* z, float* out, void* out_op,
              DType op_type, gpu::stream_t stream) const;

 private:
  CrossNetShape shape_;
  CrossForwardVariant variant_;
  gpu::RtcKernel kernel_;
};

class TunedCrossBackward {
 public:
  TunedCrossBackward(const CrossNetShape& shape, const CrossBackwardVariant& variant, int compute_major,
                     int compute_minor, const std::string& kernel_header = "");
  TunedCrossBackward(const CrossNetShape& shape, const CrossBackwardVariant& variant, const gpu::RtcBinary& binary);

  const CrossNetShape& shape() const { return shape_; }
  const CrossBackwardVariant& variant() const { return variant_; }
  gpu::KernelResources resources() const { return kernel_.resources(); }

  // Same contract as cross_backward; throws InternalError for another width or operand
  // type, or a workspace smaller than the variant's chunk partials.
  void launch(const CrossShape& s, const CrossBackward& args, void* workspace, std::size_t workspace_bytes,
              gpu::stream_t stream) const;

 private:
  CrossNetShape shape_;
  CrossBackwardVariant variant_;
  gpu::RtcKernel kernel_;
};

}  // namespace hetrec::kernels
