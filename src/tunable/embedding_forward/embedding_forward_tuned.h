#pragma once
// Variants of the pooled embedding lookup (tunable/embedding_forward/embedding_bag_forward_kernel.cuh)
// other than the one nvcc builds in: the tuner compiles its candidates through this, and
// the engine the tuned winner it loads at start. A variant is a parameter set; the
// kernel source is the same (or, for a candidate from the LLM-backed proposer, a
// rewrite of that header with the same kernel signature).
#include <cstdint>
#include <string>

#include "gpu/rtc.h"
#include "tunable/embedding_forward/embedding_forward_variant.h"
#include "kernels/embedding_types.h"

namespace hetrec::kernels {

// The program that instantiates `variant` for `shape`. A non-empty `kernel_header`
// replaces the text of tunable/embedding_forward/embedding_bag_forward_kernel.cuh.
gpu::RtcProgram embedding_forward_program(const EmbeddingForwardShape& shape, const EmbeddingForwardVariant& variant,
                                          const std::string& kernel_header = "");

// A compiled, loaded variant, launched in place of the built-in kernel.
class TunedEmbeddingForward {
 public:
  // Compiles for the current device's compute capability and loads; throws DeviceError
  // with the compiler's log when the program does not compile.
  TunedEmbeddingForward(const EmbeddingForwardShape& shape, const EmbeddingForwardVariant& variant, int compute_major,
                        int compute_minor, const std::string& kernel_header = "");
  // From an already compiled program of embedding_forward_program(shape, variant, ...).
  TunedEmbeddingForward(const EmbeddingForwardShape& shape, const EmbeddingForwardVariant& variant,
                        const gpu::RtcBinary& binary);

  const EmbeddingForwardShape& shape() const { return shape_; }
  const EmbeddingForwardVariant& variant() const { return variant_; }
  gpu::KernelResources resources() const { return kernel_.resources(); }

  // Same contract as embedding_bag_forward; throws InternalError when tables or output
  // do not match the shape, or their alignment does not allow the variant's vectors.
  void launch(const EmbeddingTables& tables, const DeviceBags& bags, const PooledView& out, int32_t* bad_ids,
              gpu::stream_t stream) const;

 private:
  EmbeddingForwardShape shape_;
  EmbeddingForwardVariant variant_;
  ForwardLaunchLayout layout_;
  gpu::RtcKernel kernel_;
};

}  // namespace hetrec::kernels
