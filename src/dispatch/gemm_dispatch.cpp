#include "dispatch/gemm_dispatch.h"

#include "core/error.h"

namespace hetrec::inline dispatch {

GemmProblem gemm_request_problem(const GemmRequest& r) {
  GemmProblem p;
  p.m = r.m;
  p.n = r.n;
  p.k = r.k;
  p.trans_a = r.trans_a;
  p.trans_b = r.trans_b;
  p.a_type = p.b_type = r.operands;
  p.c_type = r.output;
  p.allow_tf32 = r.allow_tf32 && r.operands == DType::f32;
  p.accumulate = r.accumulate;
  p.epilogue = r.epilogue;
  return with_packed_alignment(p);
}

std::string_view gemm_runner_name(GemmRunner r) { return r == GemmRunner::library ? "library" : "small_gemm"; }

GemmDispatch::GemmDispatch(const GemmSelector& selector, bool small_gemms)
    : selector_(selector), small_gemms_(small_gemms) {}

GemmDispatchChoice GemmDispatch::choose(const GemmRequest& request) const {
  GemmDispatchChoice c;
  c.problem = gemm_request_problem(request);
  std::optional<RankedConfig> blas_pick;
  std::string why;
  try {
    blas_pick = selector_.select(c.problem);
  } catch (const ConfigError& e) {
    why = e.what();
  }
  std::optional<tune::SmallGemmPick> small;
  if (small_gemms_) small = tune::pick_small_gemm(selector_.hardware(), c.problem, selector_.params());
  if (!blas_pick && !small) throw ConfigError("GEMM dispatch: no runner for " + describe_gemm_problem(c.problem) + ": " + why);
  if (blas_pick) {
    c.blas_config = blas_pick->config;
    c.predicted_us = blas_pick->estimate.time_us;
    c.launch_us = blas_pick->estimate.launch_us;
  }
  if (small && (!blas_pick || small->predicted_us < blas_pick->estimate.time_us)) {
    c.runner = GemmRunner::small_gemm;
    c.launches = tune::small_gemm_launches(small->workload.shape.kind);
    c.predicted_us = small->predicted_us;
    c.launch_us = small->predicted_us - small->kernel_us;
    c.small = std::move(small);
  }
  return c;
}

namespace {

GemmRequest request(int64_t m, int64_t n, int64_t k, bool ta, bool tb, GemmEpilogue e, bool accumulate, bool half,
                    DType sixteen, bool out_16bit, bool tf32) {
  const DType op = half ? sixteen : DType::f32;
  return {m, n, k, ta, tb, e, accumulate, op, half && out_16bit ? sixteen : DType::f32, tf32};
}

}  // namespace

std::vector<LayerGemm> cross_layer_forward_gemms(int64_t b, int64_t n, int64_t r, bool half, DType sixteen, bool tf32) {
  if (r > 0)
    return {{"V x", request(b, r, n, false, true, GemmEpilogue::none, false, half, sixteen, true, tf32)},
            {"U (V x) + b", request(b, n, r, false, true, GemmEpilogue::bias, false, half, sixteen, true, tf32)}};
  return {{"W x + b", request(b, n, n, false, true, GemmEpilogue::bias, false, half, sixteen, true, tf32)}};
}

std::vector<LayerGemm> cross_layer_backward_gemms(int64_t b, int64_t n, int64_t r, bool half, DType sixteen, bool tf32,
                                                  bool bottom) {
  const GemmEpilogue none = GemmEpilogue::none;
  if (r > 0)
    return {{"dU", request(n, r, b, true, false, none, false, half, sixteen, false, tf32)},
            {"d(V x)", request(b, r, n, false, false, none, false, half, sixteen, true, tf32)},
            {"dV", request(r, n, b, true, false, none, false, half, sixteen, false, tf32)},
            {"dx", request(b, n, r, false, false, none, bottom, half, sixteen, !bottom, tf32)}};
  return {{"dW", request(n, n, b, true, false, none, false, half, sixteen, false, tf32)},
          {"dx", request(b, n, n, false, false, none, bottom, half, sixteen, !bottom, tf32)}};
}

}  // namespace hetrec::dispatch::dispatch
