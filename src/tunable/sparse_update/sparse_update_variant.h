#pragma once
// The parameters of the embedding backward's fused sparse update
// (tunable/sparse_update/sparse_update_kernel.cuh) as plain data, and the launch layout they give for
// a row shape. Host-only, no device headers: the tuner's CPU logic (tune/) and the
// engine's launchers share these rules.
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "tunable/embedding_forward/embedding_forward_variant.h"
#include "tunable/sparse_update/sparse_update_types.h"

namespace hetrec::kernels {

inline const char* sparse_optimizer_name(SparseOptimizerKind k) {
  switch (k) {
    case SparseOptimizerKind::sgd: return "sgd";
    case SparseOptimizerKind::adagrad: return "adagrad";
    case SparseOptimizerKind::rowwise_adagrad: return "rowwise_adagrad";
  }
  return "?";
}

// What a variant is compiled for: row element type, row width, optimizer and the pooled
// gradients' element type.
struct SparseUpdateShape {
  DType row_dtype = DType::f32;  // f32, f16, bf16
  int dim = 0;
  SparseOptimizerKind optimizer = SparseOptimizerKind::rowwise_adagrad;
  DType grad_dtype = DType::f32;  // f32, or bf16 (a bf16 embedding exchange's gradients)
  std::string key() const {  // "rows=bf16 dim=128 opt=rowwise_adagrad" (+ " grad=bf16")
    return "rows=" + std::string(dtype_name(row_dtype)) + " dim=" + std::to_string(dim) +
           " opt=" + sparse_optimizer_name(optimizer) +
           (grad_dtype == DType::f32 ? "" : " grad=" + std::string(dtype_name(grad_dtype)));
  }
  bool operator==(const SparseUpdateShape&) const = default;
};

struct SparseUpdateVariant {
  int vec_bytes = 16;          // bytes per vector access of a row: 4, 8 or 16 (at least one element)
  int lanes = 0;               // threads per row, a power of two up to the warp; 0: the fewest that cover the row
  int grads_in_flight = 4;     // occurrence gradients requested before the first is added
  int block_threads = 256;     // threads per block
  // Resident blocks per SM the compiler must allow (__launch_bounds__' second argument):
  // the update is bound by the latency of its dependent loads, so more warps in flight
  // beat more registers per thread (measured on the H200, the full MLPerf step's
  // embedding backward at batch 128K: 18.2 ms against 19.8 ms with the 75 registers the
  // compiler picks unbounded).
  int min_blocks_per_sm = 4;
  bool operator==(const SparseUpdateVariant&) const = default;
};

// The variant nvcc compiles into the engine (kernels/embedding_bag_backward.cu); when
// the rows or gradients are not aligned for its 16-byte vectors the engine falls back
// to one element per access with the same other parameters.
inline constexpr SparseUpdateVariant kDefaultSparseUpdateVariant{};

// The most resident blocks per SM any launch bound may ask for (CUDA C++ Programming
// Guide, technical specifications: 32 on compute capability 9.0).
inline constexpr int kMaxLaunchBoundBlocksPerSm = 32;

// Tables whose stochastic rounding key a block of the update keeps in shared memory
// (8 bytes each: 32 KB, below the 48 KB a launch may use without opting in).
inline constexpr int kMaxCachedTableKeys = 4096;

// Rounding keys the update caches per block (its dynamic shared memory is 8 bytes each):
// 16-bit rows only.
inline int sparse_update_cached_table_keys(DType row_dtype, int num_tables) {
  if (row_dtype == DType::f32) return 0;
  return num_tables < kMaxCachedTableKeys ? num_tables : kMaxCachedTableKeys;
}

using SparseUpdateLayout = RowLaneLayout;

// Empty when `variant` can run `shape` on a device of `warp_size` lanes; otherwise why
// not (a sentence).
inline std::string sparse_update_variant_problem(const SparseUpdateShape& s, const SparseUpdateVariant& v,
                                                 int warp_size) {
  if (s.row_dtype != DType::f32 && s.row_dtype != DType::f16 && s.row_dtype != DType::bf16)
    return "rows must be fp32, fp16 or bf16";
  if (s.dim <= 0) return "row width must be positive";
  if (s.grad_dtype != DType::f32 && s.grad_dtype != DType::bf16) return "gradients must be fp32 or bf16";
  if (v.vec_bytes != 2 && v.vec_bytes != 4 && v.vec_bytes != 8 && v.vec_bytes != 16)
    return "vector width must be 2, 4, 8 or 16 bytes";
  const int row_elem = static_cast<int>(dtype_size(s.row_dtype));
  if (v.vec_bytes < row_elem) return "vector narrower than one row element";
  const int vec = v.vec_bytes / row_elem;
  if (s.dim % vec != 0)
    return "row width " + std::to_string(s.dim) + " is not a multiple of the vector (" + std::to_string(vec) +
           " elements)";
  if (v.lanes != 0 && (!forward_power_of_two(v.lanes) || v.lanes > warp_size))
    return "threads per row must be a power of two up to the warp width";
  if (v.grads_in_flight < 1 || v.grads_in_flight > 16) return "gradients in flight must be 1..16";
  if (!forward_power_of_two(v.block_threads) || v.block_threads < warp_size || v.block_threads > 1024)
    return "threads per block must be a power of two from the warp width to 1024";
  if (v.min_blocks_per_sm < 1 || v.min_blocks_per_sm > kMaxLaunchBoundBlocksPerSm)
    return "resident blocks per SM of the launch bound must be 1.." + std::to_string(kMaxLaunchBoundBlocksPerSm);
  const int vectors = s.dim / vec;
  const int lanes = v.lanes ? v.lanes : std::min(pow2_at_least(vectors), warp_size);
  const int units = pow2_at_least((vectors + lanes - 1) / lanes);
  if (units > kMaxEmbeddingUnitsPerLane)
    return std::to_string(units) + " vectors per lane exceed the limit of " + std::to_string(kMaxEmbeddingUnitsPerLane);
  return "";
}

// The launch layout; throws ConfigError with sparse_update_variant_problem's reason.
inline SparseUpdateLayout sparse_update_layout(const SparseUpdateShape& s, const SparseUpdateVariant& v,
                                               int warp_size) {
  const std::string problem = sparse_update_variant_problem(s, v, warp_size);
  if (!problem.empty()) throw ConfigError("sparse update variant for " + s.key() + ": " + problem);
  return row_lane_layout(s.row_dtype, s.dim, v.vec_bytes, v.lanes, warp_size);
}

}  // namespace hetrec::kernels
