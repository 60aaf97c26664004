#pragma once
// The parameters of the pooled embedding lookup kernel
// (tunable/embedding_forward/embedding_bag_forward_kernel.cuh) as plain data, and the launch layout they
// give for a row shape. Host-only, no device headers: the tuner's CPU logic (tune/) and
// the engine's kernel launchers share these rules.
#include <algorithm>
#include <string>

#include "core/dtype.h"
#include "core/error.h"

namespace hetrec::kernels {

// What a variant is compiled for: row and pooled element types and the row width.
struct EmbeddingForwardShape {
  DType row_dtype = DType::f32;  // f32, f16, bf16
  DType out_dtype = DType::f32;  // f32, bf16
  int dim = 0;
  std::string key() const {  // "rows=f32 out=f32 dim=128"
    return "rows=" + std::string(dtype_name(row_dtype)) + " out=" + std::string(dtype_name(out_dtype)) +
           " dim=" + std::to_string(dim);
  }
  bool operator==(const EmbeddingForwardShape&) const = default;
};

struct EmbeddingForwardVariant {
  int vec_bytes = 16;      // bytes per vector load of a row: 4, 8 or 16 (at least one element)
  int lanes = 0;           // threads per bag, a power of two up to the warp; 0: the fewest that cover the row
  int ids_in_flight = 4;   // rows requested before the first is accumulated
  int block_threads = 256; // threads per block
  bool operator==(const EmbeddingForwardVariant&) const = default;
};

// The variant nvcc compiles into the engine (tunable/embedding_forward/embedding_bag_forward.cu).
inline constexpr EmbeddingForwardVariant kDefaultForwardVariant{};

// How a variant spreads one row over a lane group (the forward's bag, the update's row).
struct RowLaneLayout {
  int vec = 1;    // elements per vector
  int lanes = 1;  // threads per row (0 in a variant: as many as the row's vectors, up to a warp)
  int units = 1;  // vectors per lane
};
using ForwardLaunchLayout = RowLaneLayout;


inline bool forward_power_of_two(int v) { return v > 0 && (v & (v - 1)) == 0; }


// Registers per lane bound the row width: at most this many vectors per lane, in every
// embedding kernel (kernels/embedding_lanes.h uses it too).
inline constexpr int kMaxEmbeddingUnitsPerLane = 8;

inline int pow2_at_least(int v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}

// Empty when `variant` can run `shape` on a device of `warp_size` lanes; otherwise why
// not (a sentence).
inline std::string forward_variant_problem(const EmbeddingForwardShape& s, const EmbeddingForwardVariant& v,
                                           int warp_size) {
  if (s.row_dtype != DType::f32 && s.row_dtype != DType::f16 && s.row_dtype != DType::bf16)
    return "rows must be fp32, fp16 or bf16";
  if (s.out_dtype != DType::f32 && s.out_dtype != DType::bf16) return "pooled output must be fp32 or bf16";
  if (s.dim <= 0) return "row width must be positive";
  if (v.vec_bytes != 4 && v.vec_bytes != 8 && v.vec_bytes != 16) return "vector width must be 4, 8 or 16 bytes";
  const int row_elem = static_cast<int>(dtype_size(s.row_dtype));
  if (v.vec_bytes < row_elem) return "vector narrower than one row element";
  const int vec = v.vec_bytes / row_elem;
  if (s.dim % vec != 0) return "row width " + std::to_string(s.dim) + " is not a multiple of the vector (" +
                               std::to_string(vec) + " elements)";
  // The pooled output is stored with the same vectors.
  const int out_bytes = vec * static_cast<int>(dtype_size(s.out_dtype));
  if (out_bytes != 2 && out_bytes != 4 && out_bytes != 8 && out_bytes % 16 != 0)
    return "output vector of " + std::to_string(out_bytes) + " bytes is not a whole number of words";
  if (v.lanes != 0 && (!forward_power_of_two(v.lanes) || v.lanes > warp_size))
    return "threads per bag must be a power of two up to the warp width";
  if (v.ids_in_flight < 1 || v.ids_in_flight > 16) return "ids in flight must be 1..16";
  if (!forward_power_of_two(v.block_threads) || v.block_threads < warp_size || v.block_threads > 1024)
    return "threads per block must be a power of two from the warp width to 1024";
  const int vectors = s.dim / vec;
  const int lanes = v.lanes ? v.lanes : std::min(pow2_at_least(vectors), warp_size);
  const int units = pow2_at_least((vectors + lanes - 1) / lanes);
  if (units > kMaxEmbeddingUnitsPerLane) return std::to_string(units) + " vectors per lane exceed the limit of " +
                                       std::to_string(kMaxEmbeddingUnitsPerLane);
  if (v.block_threads % lanes != 0) return "threads per block not a multiple of threads per bag";
  return "";
}

// The layout of a row of `dim` elements of `row_dtype` read `vec_bytes` at a time by
// `lanes` threads (0: as many as its vectors, up to `warp_size`); the variant's checks
// (whole vectors, at most kMaxEmbeddingUnitsPerLane vectors a lane) come first.
inline RowLaneLayout row_lane_layout(DType row_dtype, int dim, int vec_bytes, int lanes, int warp_size) {
  RowLaneLayout l;
  l.vec = vec_bytes / static_cast<int>(dtype_size(row_dtype));
  const int vectors = dim / l.vec;
  l.lanes = lanes ? lanes : std::min(pow2_at_least(vectors), warp_size);
  l.units = pow2_at_least((vectors + l.lanes - 1) / l.lanes);
  return l;
}

// The launch layout; throws ConfigError with forward_variant_problem's reason.
inline ForwardLaunchLayout forward_launch_layout(const EmbeddingForwardShape& s, const EmbeddingForwardVariant& v,
                                                 int warp_size) {
  const std::string problem = forward_variant_problem(s, v, warp_size);
  if (!problem.empty()) throw ConfigError("embedding forward variant for " + s.key() + ": " + problem);
  return row_lane_layout(s.row_dtype, s.dim, v.vec_bytes, v.lanes, warp_size);
}

}  // namespace hetrec::kernels
