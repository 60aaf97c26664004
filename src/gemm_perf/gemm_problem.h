#pragma once
// One GEMM as the performance model sees it: D[b] = epilogue(op(A[b]) x op(B[b]) (+ C[b]))
// with op(A) of shape M x K and op(B) of shape K x N, `batch` independent products.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "hw/hardware.h"

namespace hetrec::inline gemm_perf {

enum class GemmEpilogue { none, bias, bias_relu };
// How fp8 operands are scaled back: one scale per tensor, or one per row of A and per
// column of B.
enum class Fp8Scaling { none, per_tensor, per_row_col };

// Bytes to which an operand's rows must be aligned for every load path to be open: the
// global strides of a TMA descriptor are multiples of 16 bytes (CUDA Driver API,
// cuTensorMapEncodeTiled), and 16 bytes is the widest cp.async copy (PTX ISA).
inline constexpr int kFullOperandAlignment = 16;

struct GemmProblem {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch = 1;
  bool trans_a = false;  // A stored K x M (column-major op)
  bool trans_b = false;
  DType a_type = DType::bf16;
  DType b_type = DType::bf16;
  DType c_type = DType::bf16;       // the output D (and C when accumulating)
  DType compute_type = DType::f32;  // accumulator
  bool allow_tf32 = false;          // fp32 inputs may run on the TF32 pipe
  bool accumulate = false;          // D = A x B + C: C is read
  GemmEpilogue epilogue = GemmEpilogue::none;
  Fp8Scaling fp8_scaling = Fp8Scaling::none;
  // The largest power of two, at most kFullOperandAlignment, that divides the byte stride
  // between consecutive rows of A (of B) as stored (its leading dimension): 16 unless a
  // caller says otherwise (with_packed_alignment sets it for packed operands).
  int a_alignment = kFullOperandAlignment;
  int b_alignment = kFullOperandAlignment;

  double flops() const { return 2.0 * double(m) * double(n) * double(k) * double(batch); }
};

std::string_view epilogue_name(GemmEpilogue e);
GemmEpilogue parse_epilogue(std::string_view name, std::string_view key);  // ConfigError
std::string_view fp8_scaling_name(Fp8Scaling s);
Fp8Scaling parse_fp8_scaling(std::string_view name, std::string_view key);  // ConfigError

// Throws ConfigError naming the offending field when the problem is malformed or its dtype
// combination is not one the model covers (A and B both fp32, both fp16, both bf16, or
// both fp8; fp32 accumulation; a float output type).
void validate_gemm_problem(const GemmProblem& p);

// The pipe the problem runs on on `hw`: fp8 for fp8 operands, bf16/fp16 for 16-bit ones,
// tf32 for fp32 operands when allowed and the GPU has a TF32 pipe, fp32 otherwise.
MatrixPrecision gemm_precision(const GemmProblem& p, const Hardware& hw);

// The alignment (as GemmProblem::a_alignment) of a packed operand whose rows hold
// `row_elements` values of `type` each; a single row, or rows of one value, are one
// contiguous run and count as aligned.
int packed_row_alignment(int64_t row_elements, int64_t rows, DType type);
// `p` with a_alignment and b_alignment of packed A and B (leading dimension K or M for A,
// N or K for B, by their layouts).
GemmProblem with_packed_alignment(GemmProblem p);
// Whether both operands' rows are aligned to kFullOperandAlignment bytes.
inline bool operands_fully_aligned(const GemmProblem& p) {
  return p.a_alignment >= kFullOperandAlignment && p.b_alignment >= kFullOperandAlignment;
}

// The same product computed transposed, D^T = op(B)^T op(A)^T: M and N exchanged, A and B
// exchanged with their K-contiguity kept (a K-contiguous B becomes a K-contiguous A).
GemmProblem transposed_product(const GemmProblem& p);

// "M=4096 N=1024 K=512 batch=1 A=bf16(N) B=bf16(T) C=bf16 acc=fp32 epilogue=bias"
std::string describe_gemm_problem(const GemmProblem& p);

}  // namespace hetrec::gemm_perf::gemm_perf
