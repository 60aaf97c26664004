#pragma once
// The parameters of the cross net's element-wise passes (tunable/cross_net/cross_net_kernel.cuh)
// as plain data, and the rules a variant must meet. Host-only, no device headers: the
// tuner's CPU logic (tune/) and the launchers share them.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace hetrec::kernels {

// What a compiled variant is specialised for: the GEMM operand type (z, h, dz and the
// forward's 16-bit copy) and the cross net's width.
struct CrossNetShape {
  DType op_type = DType::f32;
  int width = 0;
  std::string key() const { return "op=" + std::string(dtype_name(op_type)) + " width=" + std::to_string(width); }
  bool operator==(const CrossNetShape&) const = default;
};

struct CrossForwardVariant {
  int vec = 1;             // elements per access
  int items = 1;           // vectors per thread
  int block_threads = 256;
  bool operator==(const CrossForwardVariant&) const = default;
};

struct CrossBackwardVariant {
  int vec = 1;            // consecutive columns per thread
  int col_threads = 256;  // threads across the columns of a block
  int row_groups = 1;     // thread groups splitting a chunk's rows (partials staged in shared memory)
  int chunk_rows = 256;   // rows per block: one chunk of the column sums
  int block_threads() const { return col_threads * row_groups; }
  bool operator==(const CrossBackwardVariant&) const = default;
};

// The variants nvcc compiles into the engine (tunable/cross_net/cross_net.cu): one element per
// thread in blocks of 256, and one thread per column walking chunks of 256 rows
// (kernels/column_chunks.cuh's geometry, so the bias gradients keep their order).
inline constexpr CrossForwardVariant kDefaultCrossForwardVariant{};
inline constexpr CrossBackwardVariant kDefaultCrossBackwardVariant{};

// Limits of the run-time compiled variants (a vector is at most 8 elements: two 16-byte
// words of fp32). Vectors per thread: beyond 8 the unrolled loads only cost registers.
inline constexpr int kMaxCrossItems = 8;
// Chunk rows are bounded so the column sums' serial chain (which the gate's bound uses,
// cross_backward_sum_chain) stays short.
inline constexpr int kMaxCrossChunkRows = 1024;
// The engine's bias-gradient workspace holds the partials of chunks of this many rows
// (kernels/column_chunks.cuh kColumnChunkRows, kernels/column_sum.h): a variant may not
// use shorter chunks, which would need more.
inline constexpr int kMinCrossChunkRows = 256;
// Threads per block a launch may have (CUDA C++ Programming Guide, compute capability 9.0).
inline constexpr int kCrossMaxBlockThreads = 1024;
// The backward's chunks are the grid's y dimension (the device limit: 65535 blocks).
inline constexpr int64_t kMaxCrossChunks = 65535;

// Bytes of an operand element.
inline int cross_op_bytes(DType op) { return static_cast<int>(dtype_size(op)); }

// Floats of the chunk partials the backward writes for `rows` rows.
inline std::size_t cross_backward_partial_floats(int64_t rows, int width, const CrossBackwardVariant& v) {
  const int64_t chunks = rows > 0 ? (rows + v.chunk_rows - 1) / v.chunk_rows : 0;
  return static_cast<std::size_t>(chunks) * static_cast<std::size_t>(width);
}

// Static shared memory of one backward block (the staged partials of all groups but the first).
inline std::size_t cross_backward_shared_bytes(const CrossBackwardVariant& v) {
  return static_cast<std::size_t>(v.row_groups - 1) * v.col_threads * v.vec * sizeof(float);
}

// The longest chain of fp32 additions of one column sum of any variant within the limits
// above on `rows` rows: the longest chunk walked by one thread, plus the chunk partials.
inline int64_t cross_backward_sum_chain(int64_t rows) {
  return kMaxCrossChunkRows + (rows + kMinCrossChunkRows - 1) / kMinCrossChunkRows;
}

inline bool cross_op_supported(DType op) { return op == DType::f32 || op == DType::bf16 || op == DType::f16; }

// Empty when `v` can run `s`; otherwise why not.
inline std::string cross_forward_variant_problem(const CrossNetShape& s, const CrossForwardVariant& v, int warp_size) {
  if (!cross_op_supported(s.op_type)) return "the operand type must be fp32, bf16 or fp16";
  if (s.width < 1) return "the width must be positive";
  if (v.vec != 1 && v.vec != 2 && v.vec != 4 && v.vec != 8) return "elements per access must be 1, 2, 4 or 8";
  if (v.items < 1 || v.items > kMaxCrossItems) return "vectors per thread must be 1.." + std::to_string(kMaxCrossItems);
  if (v.block_threads < warp_size || v.block_threads > kCrossMaxBlockThreads || v.block_threads % warp_size != 0)
    return "threads per block must be a multiple of the warp width up to " + std::to_string(kCrossMaxBlockThreads);
  return "";
}

inline std::string cross_backward_variant_problem(const CrossNetShape& s, const CrossBackwardVariant& v,
                                                  int warp_size) {
  if (!cross_op_supported(s.op_type)) return "the operand type must be fp32, bf16 or fp16";
  if (s.width < 1) return "the width must be positive";
  if (v.vec != 1 && v.vec != 2 && v.vec != 4) return "columns per thread must be 1, 2 or 4";
  if (v.col_threads < warp_size || v.col_threads % warp_size != 0)
    return "column threads must be a multiple of the warp width";
  if (v.row_groups != 1 && v.row_groups != 2 && v.row_groups != 4 && v.row_groups != 8)
    return "row groups must be 1, 2, 4 or 8";
  if (v.block_threads() > kCrossMaxBlockThreads)
    return std::to_string(v.block_threads()) + " threads per block exceed " + std::to_string(kCrossMaxBlockThreads);
  if (v.chunk_rows < kMinCrossChunkRows || v.chunk_rows > kMaxCrossChunkRows || v.chunk_rows % v.row_groups != 0)
    return "chunk rows must be " + std::to_string(kMinCrossChunkRows) + ".." + std::to_string(kMaxCrossChunkRows) +
           " and a multiple of the row groups (shorter chunks need more workspace than the engine reserves)";
  return "";
}

}  // namespace hetrec::kernels
