#pragma once
// The shapes and parameters of the small-GEMM kernels (tunable/small_gemm/small_gemm_kernel.cuh) as
// plain data, and the rules a variant must meet. Host-only, no device headers: the
// tuner's CPU logic (tune/) and the launcher share them.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace hetrec::kernels {

// The largest small dimension the kernels take (its accumulators live in registers).
inline constexpr int kSmallGemmMaxNarrow = 16;

enum class SmallGemmKind : uint8_t {
  rows,    // C[M,N] = A[M,K] op(B), N small: a layer's forward with few outputs
  outer,   // C[M,N] = A[M,K] op(B), K small: a forward with few inputs, a data gradient of a narrow layer
  reduce,  // C = X^T Y over M batch rows, X or Y narrow: a weight gradient
};

enum class SmallGemmEpilogue : uint8_t { none, bias, relu_bias };

// One GEMM, without its batch M (the tuned parameters serve any batch).
struct SmallGemmShape {
  SmallGemmKind kind = SmallGemmKind::rows;
  int narrow = 1;  // rows: N; outer: K; reduce: the narrow operand's width
  int wide = 1;    // rows: K; outer: N; reduce: the wide operand's width
  // rows, outer: B is stored N x K and used transposed (a forward's W^T), else K x N.
  // reduce: C = narrow^T wide (the narrow operand is A: C is narrow x wide), else
  // C = wide^T narrow (C is wide x narrow).
  bool flag = true;
  DType operand = DType::f32;  // A's and B's storage; C and the bias are fp32
  SmallGemmEpilogue epilogue = SmallGemmEpilogue::none;  // rows and outer only
  std::string key() const;
  bool operator==(const SmallGemmShape&) const = default;
};

struct SmallGemmVariant {
  int vec = 4;             // elements per vector access of the wide operand (outer: outputs per thread)
  int lanes = 8;           // rows: threads per row of A (1 for the other kinds)
  int rows_per_block = 4;  // rows (row groups) a block works on at once
  int unroll = 2;          // vectors (rows: of A's row; outer, reduce: rows) in flight per thread
  int split = 1;           // reduce: chunks of the batch (first-pass blocks); 1 for the other kinds
  bool operator==(const SmallGemmVariant&) const = default;
};

inline const char* small_gemm_kind_name(SmallGemmKind k) {
  switch (k) {
    case SmallGemmKind::rows: return "rows";
    case SmallGemmKind::outer: return "outer";
    case SmallGemmKind::reduce: return "reduce";
  }
  return "?";
}

inline std::string SmallGemmShape::key() const {
  std::string s = small_gemm_kind_name(kind);
  switch (kind) {
    case SmallGemmKind::rows: s += " n=" + std::to_string(narrow) + " k=" + std::to_string(wide); break;
    case SmallGemmKind::outer: s += " k=" + std::to_string(narrow) + " n=" + std::to_string(wide); break;
    case SmallGemmKind::reduce: s += " narrow=" + std::to_string(narrow) + " wide=" + std::to_string(wide); break;
  }
  if (kind == SmallGemmKind::reduce) s += flag ? " C=narrow^T*wide" : " C=wide^T*narrow";
  else s += flag ? " B^T" : " B";
  s += " ";
  s += dtype_name(operand);
  if (kind != SmallGemmKind::reduce)
    s += epilogue == SmallGemmEpilogue::none ? "" : epilogue == SmallGemmEpilogue::bias ? " bias" : " relu_bias";
  return s;
}

// The parameters a shape starts from (the tuner's first candidate, and the bench's
// "default"): 16-byte accesses, two in flight per thread, at least two warps per block.
inline SmallGemmVariant default_small_gemm_variant(const SmallGemmShape& s) {
  constexpr int kVectorBytes = 16;        // the widest load or store
  constexpr int kFloatsPerVector = 4;     // outer: fp32 outputs per 16-byte store; reduce: a vector of fp32 columns
  constexpr int kRowLanes = 8;            // rows: 8 lanes x 16 bytes = one 128-byte line of A per step
  constexpr int kRowsPerBlock = 8;        // rows: 8 rows x 8 lanes = two warps
  constexpr int kRowGroups = 2;           // outer, reduce: two row groups per block
  constexpr int kInFlight = 2;            // vectors (rows) loaded before the first is used
  constexpr int kChunks = 256;            // reduce: about two blocks per SM of a 132-SM H200
  const int elem = static_cast<int>(dtype_size(s.operand));
  switch (s.kind) {
    case SmallGemmKind::rows: return {kVectorBytes / elem, kRowLanes, kRowsPerBlock, kInFlight, 1};
    case SmallGemmKind::outer: return {kFloatsPerVector, 1, kRowGroups, kInFlight, 1};
    case SmallGemmKind::reduce: return {kFloatsPerVector, 1, kRowGroups, kInFlight, kChunks};
  }
  return {};
}

inline int small_gemm_block_threads(const SmallGemmShape& s, const SmallGemmVariant& v) {
  if (s.kind == SmallGemmKind::rows) return v.lanes * v.rows_per_block;
  return (s.wide + v.vec - 1) / v.vec * v.rows_per_block;
}

inline std::size_t small_gemm_shared_bytes(const SmallGemmShape& s, const SmallGemmVariant& v) {
  constexpr int kPad = 4;  // kSmallGemmSharedPad of the kernel header: B's rows padded to 4 floats
  switch (s.kind) {
    case SmallGemmKind::rows:
      return static_cast<std::size_t>(s.narrow) * ((s.wide + kPad - 1) / kPad * kPad) * sizeof(float);
    case SmallGemmKind::outer: return 0;
    case SmallGemmKind::reduce:
      return v.rows_per_block > 1 ? static_cast<std::size_t>(v.rows_per_block) * s.narrow *
                                        ((s.wide + v.vec - 1) / v.vec * v.vec) * sizeof(float)
                                  : 0;
  }
  return 0;
}

inline std::size_t small_gemm_workspace_floats(const SmallGemmShape& s, const SmallGemmVariant& v) {
  return s.kind == SmallGemmKind::reduce ? static_cast<std::size_t>(v.split) * s.narrow * s.wide : 0;
}

inline std::string small_gemm_variant_problem(const SmallGemmShape& s, const SmallGemmVariant& v, int warp_size,
                                              std::size_t max_shared_bytes) {
  // Vector accesses are at most 16 bytes (the widest load); unrolling beyond 8 only
  // adds registers; more chunks than this make the second pass read more partials than
  // the first pass reads rows at the batches the engine runs.
  constexpr int kMaxVectorBytes = 16;
  constexpr int kMaxUnroll = 8;
  constexpr int kMaxSplit = 4096;
  constexpr int kMaxBlockThreads = 1024;  // the CUDA limit of threads per block
  if (s.narrow < 1 || s.narrow > kSmallGemmMaxNarrow) return "the small dimension must be 1..16";
  if (s.wide < 1) return "the wide dimension must be positive";
  if (s.operand != DType::f32 && s.operand != DType::bf16 && s.operand != DType::f16)
    return "operands must be fp32, bf16 or fp16";
  if (s.kind == SmallGemmKind::reduce && s.epilogue != SmallGemmEpilogue::none)
    return "the weight-gradient GEMM has no epilogue";
  const int elem = static_cast<int>(dtype_size(s.operand));
  // outer's vectors are fp32 output stores; the others read operand elements.
  const int vec_bytes = v.vec * (s.kind == SmallGemmKind::outer ? static_cast<int>(sizeof(float)) : elem);
  if (v.vec < 1 || (v.vec & (v.vec - 1)) != 0 || vec_bytes > kMaxVectorBytes)
    return "the vector width must be a power of two of at most 16 bytes";
  if (v.unroll < 1 || v.unroll > kMaxUnroll) return "unroll must be 1..8";
  if (v.rows_per_block < 1) return "rows per block must be positive";
  if (s.kind == SmallGemmKind::rows) {
    if (v.lanes < 1 || v.lanes > warp_size || (v.lanes & (v.lanes - 1)) != 0)
      return "lanes per row must be a power of two up to the warp width";
  } else if (v.lanes != 1) {
    return "lanes per row apply to the rows kernel only (1 here)";
  }
  if (s.kind == SmallGemmKind::reduce ? (v.split < 1 || v.split > kMaxSplit) : v.split != 1)
    return "split applies to the reduce kernel only (1..4096 there, 1 elsewhere)";
  const int threads = small_gemm_block_threads(s, v);
  if (threads > kMaxBlockThreads)
    return std::to_string(threads) + " threads per block exceed " + std::to_string(kMaxBlockThreads);
  // The rows kernel's shuffles name the whole warp.
  if (s.kind == SmallGemmKind::rows && threads % warp_size != 0)
    return "threads per block must be a multiple of the warp width";
  const std::size_t bytes = small_gemm_shared_bytes(s, v);
  if (bytes > max_shared_bytes)
    return std::to_string(bytes) + " bytes of shared memory per block exceed the " + std::to_string(max_shared_bytes) +
           " a block may use";
  return "";
}

}  // namespace hetrec::kernels
