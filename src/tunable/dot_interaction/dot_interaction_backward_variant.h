#pragma once
// The parameters of the dot interaction's backward kernel
// (tunable/dot_interaction/dot_interaction_backward_kernel.cuh) as plain data, and the rules a variant
// must meet. Host-only, no device headers: the tuner's CPU logic (tune/) and the
// launchers share them. The shape is the forward's (tunable/dot_interaction/dot_interaction_variant.h).
#include <cstddef>
#include <string>

#include "tunable/dot_interaction/dot_interaction_variant.h"

namespace hetrec::kernels {

struct DotBackwardVariant {
  int block_threads = 256;
  int samples_per_block = 1;
  int row_pad = 1;          // floats after each staged feature row and pair-gradient row
  int rows_per_thread = 1;  // feature rows whose gradient one thread accumulates per column
  bool operator==(const DotBackwardVariant&) const = default;
};

// The variant nvcc compiles into the engine (tunable/dot_interaction/dot_interaction.cu).
inline constexpr DotBackwardVariant kDefaultDotBackwardVariant{};

// The largest rows_per_thread a variant may ask for: its accumulators live in registers.
inline constexpr int kMaxDotBackwardRowsPerThread = 8;

// Dynamic shared memory of one block: per sample the features (F x (D + pad)) and the
// pair-gradient matrix (F x (F + pad)).
inline std::size_t dot_backward_shared_bytes(int num_features, int dim, const DotBackwardVariant& v) {
  const std::size_t per_sample = static_cast<std::size_t>(num_features) * (dim + v.row_pad) +
                                 static_cast<std::size_t>(num_features) * (num_features + v.row_pad);
  return static_cast<std::size_t>(v.samples_per_block) * per_sample * sizeof(float);
}

// Empty when `v` can run `s` on a device of `warp_size` lanes whose blocks may use
// `max_shared_bytes` of shared memory; otherwise why not.
inline std::string dot_backward_variant_problem(const DotForwardShape& s, const DotBackwardVariant& v, int warp_size,
                                                std::size_t max_shared_bytes) {
  if (s.num_features < 1 || s.dim < 1) return "features and row width must be positive";
  if (v.block_threads < warp_size || v.block_threads > 1024 || v.block_threads % warp_size != 0)
    return "threads per block must be a multiple of the warp width up to 1024";
  if (v.samples_per_block < 1 || v.samples_per_block > 16) return "samples per block must be 1..16";
  if (v.row_pad < 0 || v.row_pad > 8) return "row padding must be 0..8 floats";
  if (v.rows_per_thread < 1 || v.rows_per_thread > kMaxDotBackwardRowsPerThread)
    return "rows per thread must be 1.." + std::to_string(kMaxDotBackwardRowsPerThread);
  const std::size_t bytes = dot_backward_shared_bytes(s.num_features, s.dim, v);
  if (bytes > max_shared_bytes)
    return std::to_string(bytes) + " bytes of shared memory per block exceed the " + std::to_string(max_shared_bytes) +
           " a block may use";
  return "";
}

}  // namespace hetrec::kernels
