#include "tune/gemm_select_text.h"

#include "core/error.h"
#include "gemm_perf/gemm_report.h"
#include "gemm_perf/gemm_selector.h"
#include "tune/small_gemm_selection.h"

namespace hetrec::tune {

GemmProblem gemm_problem_of(const GemmSelectRequest& r, const std::string& key_prefix) {
  const auto positive = [&](int64_t v, const char* name) {
    if (v <= 0)
      throw ConfigError(key_prefix + name + ": expected a positive integer, got " + std::to_string(v));
    return v;
  };
  GemmProblem p;
  p.m = positive(r.m, "m");
  p.n = positive(r.n, "n");
  p.k = positive(r.k, "k");
  p.batch = positive(r.batch, "batch");
  p.trans_a = r.trans_a;
  p.trans_b = r.trans_b;
  p.a_type = p.b_type = parse_dtype(r.dtype, key_prefix + "dtype");
  p.c_type = r.out_dtype.empty() ? (p.a_type == DType::f32 ? DType::f32 : DType::bf16)
                                 : parse_dtype(r.out_dtype, key_prefix + (key_prefix == "--" ? "out-dtype" : "out_dtype"));
  p.allow_tf32 = r.tf32;
  p.epilogue = parse_epilogue(r.epilogue, key_prefix + "epilogue");
  if (p.a_type == DType::f8e4m3 || p.a_type == DType::f8e5m2) p.fp8_scaling = Fp8Scaling::per_tensor;
  return with_packed_alignment(p);  // the operands as stored: packed
}

std::string gemm_select_text(const Hardware& hw, const GemmProblem& p, const GemmModelParams& params) {
  std::string text = gemm_select_report(hw, p, params);
  // Our small-GEMM kernels compete where a dimension is at most 16.
  if (!small_gemm_workloads(p).empty()) {
    double cublaslt_us = 0.0;
    try {
      cublaslt_us = GemmSelector::for_hardware(hw, params).select(p).estimate.time_us;
    } catch (const ConfigError&) {
      // no library configuration runs it: the small-GEMM kernel is the only candidate
    }
    text += small_gemm_select_report(hw, p, params, cublaslt_us);
  }
  return text;
}

}  // namespace hetrec::tune
