#pragma once
// Variants of the dot interaction's forward kernel other than the built-in one, compiled
// at run time from the same source (tunable/dot_interaction/dot_interaction_kernel.cuh): the tuner's
// candidates and the tuned winner the engine loads.
#include <cstdint>
#include <string>

#include "gpu/rtc.h"
#include "tunable/dot_interaction/dot_interaction.h"
#include "tunable/dot_interaction/dot_interaction_variant.h"

namespace hetrec::kernels {

// The program that instantiates `variant`. A non-empty `kernel_header` replaces the text
// of tunable/dot_interaction/dot_interaction_kernel.cuh.
gpu::RtcProgram dot_forward_program(const DotForwardVariant& variant, const std::string& kernel_header = "");

class TunedDotForward {
 public:
  // Compiles for compute capability major.minor and loads on the current device; throws
  // DeviceError with the compiler's log when the program does not compile.
  TunedDotForward(const DotForwardShape& shape, const DotForwardVariant& variant, int compute_major, int compute_minor,
                  const std::string& kernel_header = "");
  TunedDotForward(const DotForwardShape& shape, const DotForwardVariant& variant, const gpu::RtcBinary& binary);

  const DotForwardShape& shape() const { return shape_; }
  const DotForwardVariant& variant() const { return variant_; }
  gpu::KernelResources resources() const { return kernel_.resources(); }

  // Same contract as dot_interaction_forward; throws InternalError for another shape.
  void launch(const DotInteractionShape& shape, const float* features, int64_t feature_stride, float* out,
              int64_t out_stride, gpu::stream_t stream) const;

 private:
  DotForwardShape shape_;
  DotForwardVariant variant_;
  gpu::RtcKernel kernel_;
};

}  // namespace hetrec::kernels
