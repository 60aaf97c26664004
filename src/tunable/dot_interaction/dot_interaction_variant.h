#pragma once
// The parameters of the dot interaction's forward kernel
// (tunable/dot_interaction/dot_interaction_kernel.cuh) as plain data, and the rules a variant must meet.
// Host-only, no device headers: the tuner's CPU logic (tune/) and the launchers share them.
#include <cstddef>
#include <string>

namespace hetrec::kernels {

struct DotForwardShape {
  int num_features = 0;  // F
  int dim = 0;           // D
  bool self = false;
  std::string key() const {
    return "features=" + std::to_string(num_features) + " dim=" + std::to_string(dim) + (self ? " self" : "");
  }
  bool operator==(const DotForwardShape&) const = default;
};

struct DotForwardVariant {
  int block_threads = 256;
  int samples_per_block = 1;
  int row_pad = 1;  // floats after each staged row
  bool operator==(const DotForwardVariant&) const = default;
};

// The variant nvcc compiles into the engine (tunable/dot_interaction/dot_interaction.cu).
inline constexpr DotForwardVariant kDefaultDotForwardVariant{};

// Dynamic shared memory of one block.
inline std::size_t dot_forward_shared_bytes(int num_features, int dim, const DotForwardVariant& v) {
  return static_cast<std::size_t>(v.samples_per_block) * num_features * (dim + v.row_pad) * sizeof(float);
}

// Empty when `v` can run `s` on a device of `warp_size` lanes whose blocks may use
// `max_shared_bytes` of shared memory; otherwise why not.
inline std::string dot_forward_variant_problem(const DotForwardShape& s, const DotForwardVariant& v, int warp_size,
                                               std::size_t max_shared_bytes) {
  if (s.num_features < 1 || s.dim < 1) return "features and row width must be positive";
  if (v.block_threads < warp_size || v.block_threads > 1024 || v.block_threads % warp_size != 0)
    return "threads per block must be a multiple of the warp width up to 1024";
  if (v.samples_per_block < 1 || v.samples_per_block > 16) return "samples per block must be 1..16";
  if (v.row_pad < 0 || v.row_pad > 8) return "row padding must be 0..8 floats";
  const std::size_t bytes = dot_forward_shared_bytes(s.num_features, s.dim, v);
  if (bytes > max_shared_bytes)
    return std::to_string(bytes) + " bytes of shared memory per block exceed the " + std::to_string(max_shared_bytes) +
           " a block may use";
  return "";
}

}  // namespace hetrec::kernels
