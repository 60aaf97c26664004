#include "tune/small_gemm_selection.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/error.h"
#include "tune/variant_space.h"

namespace hetrec::tune {

namespace {
using kernels::kSmallGemmMaxNarrow;
using kernels::SmallGemmEpilogue;
using kernels::SmallGemmKind;

bool small(int64_t d) { return d >= 1 && d <= kSmallGemmMaxNarrow; }

SmallGemmWorkload workload(SmallGemmKind kind, int64_t narrow, int64_t wide, bool flag, DType operand,
                           SmallGemmEpilogue epilogue, int64_t m) {
  SmallGemmWorkload w;
  w.shape.kind = kind;
  w.shape.narrow = static_cast<int>(narrow);
  w.shape.wide = static_cast<int>(wide);
  w.shape.flag = flag;
  w.shape.operand = operand;
  w.shape.epilogue = epilogue;
  w.m = m;
  return w;
}
}  // namespace

std::vector<SmallGemmWorkload> small_gemm_workloads(const GemmProblem& p) {
  std::vector<SmallGemmWorkload> out;
  const bool operand_ok = p.a_type == p.b_type &&
                          (p.a_type == DType::f32 || p.a_type == DType::bf16 || p.a_type == DType::f16);
  if (!operand_ok || p.c_type != DType::f32 || p.accumulate || p.batch != 1 || p.fp8_scaling != Fp8Scaling::none)
    return out;
  // The wide dimension indexes 32-bit threads and shared-memory rows.
  constexpr int64_t kMaxWide = int64_t{1} << 30;
  if (p.m < 1 || p.n < 1 || p.k < 1) return out;
  const SmallGemmEpilogue epilogue = p.epilogue == GemmEpilogue::none   ? SmallGemmEpilogue::none
                                     : p.epilogue == GemmEpilogue::bias ? SmallGemmEpilogue::bias
                                                                        : SmallGemmEpilogue::relu_bias;
  if (!p.trans_a) {
    // B stored N x K (trans_b) is the kernels' "B^T" (flag set).
    if (small(p.n) && p.k <= kMaxWide)
      out.push_back(workload(SmallGemmKind::rows, p.n, p.k, p.trans_b, p.a_type, epilogue, p.m));
    if (small(p.k) && p.n <= kMaxWide)
      out.push_back(workload(SmallGemmKind::outer, p.k, p.n, p.trans_b, p.a_type, epilogue, p.m));
  } else if (!p.trans_b && epilogue == SmallGemmEpilogue::none) {
    // C[M, N] = A^T B over K rows: narrow A gives C = narrow^T wide, narrow B C = wide^T narrow.
    if (small(p.m) && p.n <= kMaxWide)
      out.push_back(workload(SmallGemmKind::reduce, p.m, p.n, true, p.a_type, epilogue, p.k));
    if (small(p.n) && p.m <= kMaxWide)
      out.push_back(workload(SmallGemmKind::reduce, p.n, p.m, false, p.a_type, epilogue, p.k));
  }
  return out;
}

GemmProblem small_gemm_problem(const SmallGemmWorkload& w) {
  GemmProblem p;
  p.a_type = p.b_type = w.shape.operand;
  p.c_type = DType::f32;
  p.epilogue = w.shape.epilogue == SmallGemmEpilogue::none   ? GemmEpilogue::none
               : w.shape.epilogue == SmallGemmEpilogue::bias ? GemmEpilogue::bias
                                                             : GemmEpilogue::bias_relu;
  switch (w.shape.kind) {
    case SmallGemmKind::rows: p.m = w.m, p.n = w.shape.narrow, p.k = w.shape.wide, p.trans_b = w.shape.flag; break;
    case SmallGemmKind::outer: p.m = w.m, p.n = w.shape.wide, p.k = w.shape.narrow, p.trans_b = w.shape.flag; break;
    case SmallGemmKind::reduce:
      p.k = w.m, p.trans_a = true;
      p.m = w.shape.flag ? w.shape.narrow : w.shape.wide;
      p.n = w.shape.flag ? w.shape.wide : w.shape.narrow;
      break;
  }
  return p;
}

int small_gemm_launches(SmallGemmKind kind) { return kind == SmallGemmKind::reduce ? 2 : 1; }

const std::vector<kernels::SmallGemmVariant>& small_gemm_variants(SmallGemmKind kind) {
  static const auto build = [](SmallGemmKind k) {
    std::vector<kernels::SmallGemmVariant> v;
    for (const ParameterSet& p : enumerate(small_gemm_space(k))) v.push_back(to_small_gemm_variant(p));
    return v;
  };
  static const std::vector<kernels::SmallGemmVariant> rows = build(SmallGemmKind::rows);
  static const std::vector<kernels::SmallGemmVariant> outer = build(SmallGemmKind::outer);
  static const std::vector<kernels::SmallGemmVariant> reduce = build(SmallGemmKind::reduce);
  switch (kind) {
    case SmallGemmKind::rows: return rows;
    case SmallGemmKind::outer: return outer;
    case SmallGemmKind::reduce: return reduce;
  }
  throw InternalError("small_gemm_variants: unknown kind");
}

SmallGemmPick price_small_gemm(const Hardware& hw, const SmallGemmWorkload& w, const kernels::SmallGemmVariant& v,
                               const GemmModelParams& params) {
  SmallGemmPick pick;
  pick.workload = w;
  pick.variant = v;
  pick.kernel_us = small_gemm_predicted_us(hw, w, v);
  pick.predicted_us = pick.kernel_us + small_gemm_launches(w.shape.kind) * params.launch_overhead_us;
  pick.predicted = 1;
  return pick;
}

std::vector<SmallGemmPick> rank_small_gemm(const Hardware& hw, const GemmProblem& problem,
                                           const GemmModelParams& params) {
  struct Ranked {
    SmallGemmPick pick;
    double issue_us;
    // Where predictions tie (all at the floor), more resident threads and then more bytes in
    // flight per thread leave more slack for the latency the model only assumes.
    double resident;
    double in_flight;
  };
  std::vector<Ranked> ranked;
  for (const SmallGemmWorkload& w : small_gemm_workloads(problem))
    for (const kernels::SmallGemmVariant& v : small_gemm_variants(w.shape.kind))
      if (small_gemm_static_problem(hw, w, v).empty())
        ranked.push_back({price_small_gemm(hw, w, v, params), small_gemm_issue_us(hw, w, v),
                          small_gemm_resident_threads_per_unit(hw, w, v),
                          small_gemm_bytes_in_flight_per_thread(w, v)});
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    if (a.pick.predicted_us != b.pick.predicted_us) return a.pick.predicted_us < b.pick.predicted_us;
    if (a.resident != b.resident) return a.resident > b.resident;
    if (a.issue_us != b.issue_us) return a.issue_us < b.issue_us;
    return a.in_flight > b.in_flight;
  });
  std::vector<SmallGemmPick> out;
  out.reserve(ranked.size());
  for (Ranked& r : ranked) {
    r.pick.predicted = ranked.size();
    out.push_back(r.pick);
  }
  return out;
}

std::optional<SmallGemmPick> pick_small_gemm(const Hardware& hw, const GemmProblem& problem,
                                             const GemmModelParams& params) {
  std::vector<SmallGemmPick> ranked = rank_small_gemm(hw, problem, params);
  if (ranked.empty()) return std::nullopt;
  return ranked.front();
}

}  // namespace hetrec::tune

namespace hetrec::tune {

std::string small_gemm_select_report(const Hardware& hw, const GemmProblem& problem, const GemmModelParams& params,
                                     double library_us) {
  // The pick's CPU cost: the median of a few repetitions (the first warms the variant lists).
  constexpr int kTimings = 9;
  std::vector<double> cost_us;
  std::optional<SmallGemmPick> pick;
  for (int i = 0; i < kTimings; ++i) {
    const auto start = std::chrono::steady_clock::now();
    pick = pick_small_gemm(hw, problem, params);
    cost_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(cost_us.begin(), cost_us.end());
  if (!pick) return "";
  const auto us = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", v);
    return std::string(b);
  };
  const kernels::SmallGemmVariant& v = pick->variant;
  std::string s = "small-GEMM kernel: " + pick->workload.shape.key() + " vec=" + std::to_string(v.vec) +
                  " lanes=" + std::to_string(v.lanes) + " rows_per_block=" + std::to_string(v.rows_per_block) +
                  " unroll=" + std::to_string(v.unroll) + " split=" + std::to_string(v.split) + "\n";
  const int launches = small_gemm_launches(pick->workload.shape.kind);
  s += "predicted: " + us(pick->predicted_us) + " us (kernel " + us(pick->kernel_us) + ", " + std::to_string(launches) +
       " launch(es) x " + us(params.launch_overhead_us) + "), floor " + us(small_gemm_floor_us(hw, pick->workload)) +
       " us; " + std::to_string(pick->predicted) + " variants predicted in " + us(cost_us[kTimings / 2]) +
       " us of CPU\n";
  if (library_us <= 0.0) {
    s += "selected:  the small-GEMM kernel (no library configuration runs this GEMM)\n";
  } else if (pick->predicted_us < library_us) {
    s += "selected:  the small-GEMM kernel, predicted " + us(library_us / pick->predicted_us) +
         "x faster than the library configuration\n";
  } else {
    s += "selected:  the library configuration above, predicted " + us(pick->predicted_us / library_us) +
         "x faster than the small-GEMM kernel\n";
  }
  return s;
}

}  // namespace hetrec::tune
