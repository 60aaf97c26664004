#pragma once
// How the embedding kernels spread one row over the lanes of a warp: a group of `lanes`
// consecutive threads (a power of two up to the warp width) handles one bag or one row,
// each lane `units` vectors of `vec` elements.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "gpu/platform.h"
#include "tunable/embedding_forward/embedding_forward_variant.h"
#include "kernels/embedding_types.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

inline constexpr int kMaxUnitsPerLane = kMaxEmbeddingUnitsPerLane;

struct LaneLayout {
  int lanes = 1;
  int units = 1;  // 1, 2, 4 or 8
};

inline LaneLayout lane_layout(int dim, int vec) {
  const int vectors = ceil_div(dim, vec);
  LaneLayout l;
  l.lanes = next_pow2(vectors) < gpu::kWarpSize ? next_pow2(vectors) : gpu::kWarpSize;
  l.units = next_pow2(ceil_div(vectors, l.lanes));
  if (l.units > kMaxUnitsPerLane)
    throw ConfigError("model.embedding_dim = " + std::to_string(dim) + " is too wide for the GPU embedding kernels (at most " +
                      std::to_string(gpu::kWarpSize * kMaxUnitsPerLane * vec) + " for this row type)");
  return l;
}

// The vector path needs whole vectors per row and pointers aligned to the access width.
inline bool vector_path_ok(int dim, int vec, const void* ptr, std::size_t elem_bytes) {
  const std::size_t access = static_cast<std::size_t>(vec) * elem_bytes;
  const std::size_t align = access < 16 ? access : 16;
  return dim % vec == 0 && reinterpret_cast<std::uintptr_t>(ptr) % align == 0;
}

inline void check_tables(const EmbeddingTables& t, const char* who) {
  if (t.dim <= 0 || t.num_tables < 0 || !t.row_offsets || !t.mean_pooling || (t.total_rows > 0 && !t.weights && !t.table_weights))
    throw InternalError(std::string(who) + ": incomplete EmbeddingTables description");
  if (t.row_dtype != DType::f32 && t.row_dtype != DType::f16 && t.row_dtype != DType::bf16)
    throw ConfigError(std::string(who) + ": embedding rows must be fp32, fp16 or bf16, got " +
                      std::string(dtype_name(t.row_dtype)));
}

}  // namespace hetrec::kernels
