#pragma once
// Variants of the embedding backward's fused sparse update
// (tunable/sparse_update/sparse_update_kernel.cuh) other than the one nvcc builds in: the tuner
// compiles its candidates through this, and the engine the tuned winner it loads at
// start. A variant is a parameter set; the kernel source is the same (or, for a
// candidate from the LLM-backed proposer, a rewrite of that header with the same
// kernel signature).
#include <cstdint>
#include <string>

#include "gpu/rtc.h"
#include "kernels/embedding_types.h"
#include "tunable/sparse_update/sparse_update_variant.h"

namespace hetrec::kernels {

// The program that instantiates `variant` for `shape`. A non-empty `kernel_header`
// replaces the text of tunable/sparse_update/sparse_update_kernel.cuh.
gpu::RtcProgram sparse_update_program(const SparseUpdateShape& shape, const SparseUpdateVariant& variant,
                                      const std::string& kernel_header = "");

// A compiled, loaded variant, launched in place of the built-in update.
class TunedSparseUpdate {
 public:
  // Compiles for the given compute capability and loads; throws DeviceError with the
  // compiler's log when the program does not compile.
  TunedSparseUpdate(const SparseUpdateShape& shape, const SparseUpdateVariant& variant, int compute_major,
                    int compute_minor, const std::string& kernel_header = "");
  // From an already compiled program of sparse_update_program(shape, variant, ...).
  TunedSparseUpdate(const SparseUpdateShape& shape, const SparseUpdateVariant& variant, const gpu::RtcBinary& binary);

  const SparseUpdateShape& shape() const { return shape_; }
  const SparseUpdateVariant& variant() const { return variant_; }
  gpu::KernelResources resources() const { return kernel_.resources(); }
  // Dynamic shared memory per block of a launch on `num_tables` tables.
  std::size_t dynamic_shared_bytes(int num_tables) const;

  // The update part of embedding_bag_backward_update on a prepared plan; throws
  // InternalError when the tables or optimizer do not match the shape, or their
  // alignment does not allow the variant's vectors.
  void launch(const EmbeddingTables& tables, const DeviceBags& bags, const float* grad_pooled,
              int64_t grad_row_stride, const SparseOptimizerParams& optimizer, const SparseUpdatePlan& plan,
              gpu::stream_t stream) const;
  // From gradients of the shape's grad_dtype (fp32 or bf16).
  void launch(const EmbeddingTables& tables, const DeviceBags& bags, const PooledGradView& grad,
              const SparseOptimizerParams& optimizer, const SparseUpdatePlan& plan, gpu::stream_t stream) const;

 private:
  SparseUpdateShape shape_;
  SparseUpdateVariant variant_;
  SparseUpdateLayout layout_;
  gpu::RtcKernel kernel_;
};

}  // namespace hetrec::kernels
