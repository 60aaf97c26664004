#include "gemm_perf/gemm_problem.h"

#include <utility>

#include "core/error.h"

namespace hetrec::inline gemm_perf {

namespace {

bool is_fp8(DType t) { return t == DType::f8e4m3 || t == DType::f8e5m2; }

}  // namespace

std::string_view epilogue_name(GemmEpilogue e) {
  switch (e) {
    case GemmEpilogue::none:
      return "none";
    case GemmEpilogue::bias:
      return "bias";
    case GemmEpilogue::bias_relu:
      return "bias_relu";
  }
  return "?";
}

GemmEpilogue parse_epilogue(std::string_view name, std::string_view key) {
  for (GemmEpilogue e : {GemmEpilogue::none, GemmEpilogue::bias, GemmEpilogue::bias_relu})
    if (epilogue_name(e) == name) return e;
  throw ConfigError("config key '" + std::string(key) + "': unknown epilogue '" + std::string(name) +
                    "', expected none, bias or bias_relu");
}

std::string_view fp8_scaling_name(Fp8Scaling s) {
  switch (s) {
    case Fp8Scaling::none:
      return "none";
    case Fp8Scaling::per_tensor:
      return "per_tensor";
    case Fp8Scaling::per_row_col:
      return "per_row_col";
  }
  return "?";
}

Fp8Scaling parse_fp8_scaling(std::string_view name, std::string_view key) {
  for (Fp8Scaling s : {Fp8Scaling::none, Fp8Scaling::per_tensor, Fp8Scaling::per_row_col})
    if (fp8_scaling_name(s) == name) return s;
  throw ConfigError("config key '" + std::string(key) + "': unknown fp8 scaling '" + std::string(name) +
                    "', expected none, per_tensor or per_row_col");
}

void validate_gemm_problem(const GemmProblem& p) {
  auto fail = [](const char* field, const std::string& what) {
    throw ConfigError(std::string("GEMM problem field '") + field + "': " + what);
  };
  if (p.m < 1) fail("m", "must be positive, found " + std::to_string(p.m));
  if (p.n < 1) fail("n", "must be positive, found " + std::to_string(p.n));
  if (p.k < 1) fail("k", "must be positive, found " + std::to_string(p.k));
  if (p.batch < 1) fail("batch", "must be positive, found " + std::to_string(p.batch));
  const bool both_fp8 = is_fp8(p.a_type) && is_fp8(p.b_type);
  const bool same_wide =
      p.a_type == p.b_type && (p.a_type == DType::f32 || p.a_type == DType::f16 || p.a_type == DType::bf16);
  if (!both_fp8 && !same_wide)
    fail("b_type", "A is " + std::string(dtype_name(p.a_type)) + " and B is " +
                       std::string(dtype_name(p.b_type)) +
                       ": expected both fp32, both fp16, both bf16 or both fp8");
  if (p.compute_type != DType::f32)
    fail("compute_type", "expected fp32 accumulation, found " + std::string(dtype_name(p.compute_type)));
  if (!is_float(p.c_type) || p.c_type == DType::f64)
    fail("c_type", "expected fp32, fp16, bf16 or an fp8 type, found " + std::string(dtype_name(p.c_type)));
  if (p.fp8_scaling != Fp8Scaling::none && !both_fp8)
    fail("fp8_scaling", "scales apply to fp8 operands only");
  if (p.allow_tf32 && p.a_type != DType::f32) fail("allow_tf32", "applies to fp32 operands only");
  auto alignment = [&](const char* field, int a) {
    if (a < 1 || a > kFullOperandAlignment || (a & (a - 1)) != 0)
      fail(field, "expected a power of two from 1 to " + std::to_string(kFullOperandAlignment) + " bytes, found " +
                      std::to_string(a));
  };
  alignment("a_alignment", p.a_alignment);
  alignment("b_alignment", p.b_alignment);
}

int packed_row_alignment(int64_t row_elements, int64_t rows, DType type) {
  if (rows <= 1 || row_elements <= 1) return kFullOperandAlignment;
  const int64_t stride = row_elements * static_cast<int64_t>(dtype_size(type));
  int a = 1;
  while (a < kFullOperandAlignment && stride % (2 * a) == 0) a *= 2;
  return a;
}

GemmProblem with_packed_alignment(GemmProblem p) {
  // Row-major: A is stored M x K (K x M when trans_a), B K x N (N x K when trans_b).
  p.a_alignment = p.trans_a ? packed_row_alignment(p.m, p.k, p.a_type) : packed_row_alignment(p.k, p.m, p.a_type);
  p.b_alignment = p.trans_b ? packed_row_alignment(p.k, p.n, p.b_type) : packed_row_alignment(p.n, p.k, p.b_type);
  return p;
}

MatrixPrecision gemm_precision(const GemmProblem& p, const Hardware& hw) {
  if (is_fp8(p.a_type)) return MatrixPrecision::fp8;
  if (p.a_type == DType::bf16) return MatrixPrecision::bf16;
  if (p.a_type == DType::f16) return MatrixPrecision::fp16;
  if (p.allow_tf32 && hw.dense_tflops.tf32 > 0.0) return MatrixPrecision::tf32;
  return MatrixPrecision::fp32;
}

GemmProblem transposed_product(const GemmProblem& e) {
  GemmProblem p = e;
  p.m = e.n;
  p.n = e.m;
  std::swap(p.a_type, p.b_type);
  std::swap(p.a_alignment, p.b_alignment);
  // The new A is op(B)^T: K-contiguous exactly when B is (stored transposed), which in the
  // row-major convention of GemmProblem means not transposed; likewise the new B.
  p.trans_a = !e.trans_b;
  p.trans_b = !e.trans_a;
  return p;
}

std::string describe_gemm_problem(const GemmProblem& p) {
  std::string s = "M=" + std::to_string(p.m) + " N=" + std::to_string(p.n) + " K=" + std::to_string(p.k) +
                  " batch=" + std::to_string(p.batch) + " A=" + std::string(dtype_name(p.a_type)) +
                  (p.trans_a ? "(T)" : "(N)") + " B=" + std::string(dtype_name(p.b_type)) +
                  (p.trans_b ? "(T)" : "(N)") + " C=" + std::string(dtype_name(p.c_type)) +
                  " acc=" + std::string(dtype_name(p.compute_type));
  if (p.allow_tf32) s += " tf32";
  if (p.accumulate) s += " +C";
  s += " epilogue=" + std::string(epilogue_name(p.epilogue));
  if (p.fp8_scaling != Fp8Scaling::none) s += " scales=" + std::string(fp8_scaling_name(p.fp8_scaling));
  if (!operands_fully_aligned(p))
    s += " rows aligned A=" + std::to_string(p.a_alignment) + "B B=" + std::to_string(p.b_alignment) + "B";
  return s;
}

}  // namespace hetrec::gemm_perf::gemm_perf
