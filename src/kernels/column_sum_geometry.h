#pragma once
// The geometry of the column sums (kernels/column_chunks.cuh, kernels/column_sum.h): the
// row chunks each column is summed in and the workspace of their partials. Plain C++
// (constexpr), for the launchers and for the planner (plan/memory_model.cpp,
// plan/step_model.cpp).
#include <cstddef>
#include <cstdint>

#include "kernels/workspace_geometry.h"

namespace hetrec::kernels {

inline constexpr int kColumnChunkThreads = 256;
// Rows summed sequentially by one thread before the partials are combined: a few
// hundred keeps both passes short for batches of 1k to 256k samples.
inline constexpr int64_t kColumnChunkRows = 256;
// Kernels one column sum launches: the chunk partials, then their combination.
inline constexpr int kColumnSumLaunches = 2;

constexpr int64_t column_chunk_count(int64_t rows) { return rows > 0 ? blocks_of(rows, kColumnChunkRows) : 0; }

// Bytes of the chunk partials of a rows x cols column sum.
constexpr std::size_t column_sum_workspace_bytes(int64_t rows, int64_t cols) {
  return static_cast<std::size_t>(column_chunk_count(rows) * cols) * sizeof(float);
}

}  // namespace hetrec::kernels
