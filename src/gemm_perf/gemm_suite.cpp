#include "gemm_perf/gemm_suite.h"

#include <set>
#include <tuple>

#include "core/error.h"

namespace hetrec::inline gemm_perf {

namespace {

// Batches 1K..128K, powers of two (the per-GPU batches the planner considers).
constexpr int64_t kMinBatch = 1024;
constexpr int64_t kMaxBatch = 128 * 1024;
// cuBLASLt's FP8 matmuls need K and the output width (column-major leading dimensions)
// to be multiples of 16 bytes of e4m3, and the "TN" layout, which in the row-major
// language is exactly the forward GEMM (A as stored, B transposed).
constexpr int64_t kFp8Multiple = 16;

// Adds an MLP: widths[0] is the input width; every layer but the last has a ReLU
// (the last of a bottom MLP has one too: `relu_last`).
void add_mlp(std::vector<DenseLayerShape>& out, const std::string& model, const std::string& prefix,
             const std::vector<int64_t>& widths, bool relu_last) {
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    const bool last = i + 2 == widths.size();
    out.push_back({model, prefix + std::to_string(i), widths[i], widths[i + 1], !last || relu_last});
  }
}

int64_t dot_interaction_width(int64_t tables, int64_t dim) { return dim + (tables + 1) * tables / 2; }

}  // namespace

std::string_view gemm_pass_name(GemmPass p) {
  switch (p) {
    case GemmPass::forward: return "fwd";
    case GemmPass::dgrad: return "dgrad";
    case GemmPass::wgrad: return "wgrad";
  }
  return "?";
}

std::vector<DenseLayerShape> gemm_suite_layers() {
  std::vector<DenseLayerShape> l;
  // configs/demo.toml: 13 dense, 8 tables of dim 16, bottom 64-32-16, top 64-32-1.
  add_mlp(l, "demo", "bot", {13, 64, 32, 16}, true);
  add_mlp(l, "demo", "top", {dot_interaction_width(8, 16), 64, 32, 1}, false);
  // MLPerf DLRM (Criteo 1TB): 26 tables of dim 128, bottom 13-512-256-128, dot
  // interaction (128 + 27*26/2 = 479), top 1024-1024-512-256-1.
  add_mlp(l, "dlrm_mlperf", "bot", {13, 512, 256, 128}, true);
  add_mlp(l, "dlrm_mlperf", "top", {dot_interaction_width(26, 128), 1024, 1024, 512, 256, 1}, false);
  // configs/dlrm_dcnv2_mlperf.toml: same bottom; 27 x 128 = 3456 wide input to three
  // low-rank (512) cross layers (x V then U, no ReLU; the three share shapes, so one
  // stands for all), top on the 3456-wide cross output.
  add_mlp(l, "dcnv2_mlperf", "bot", {13, 512, 256, 128}, true);
  l.push_back({"dcnv2_mlperf", "crossv", 3456, 512, false});
  l.push_back({"dcnv2_mlperf", "crossu", 512, 3456, false});
  add_mlp(l, "dcnv2_mlperf", "top", {3456, 1024, 1024, 512, 256, 1}, false);
  // Other ranking widths: a wide top MLP (2048-2048-1024) and a narrow one of 256 wide
  // layers over a 64-dim, 40-table dot interaction.
  add_mlp(l, "wide", "top", {2048, 2048, 1024}, true);
  add_mlp(l, "narrow", "top", {dot_interaction_width(40, 64), 256, 256}, true);
  return l;
}

std::vector<GemmSuiteShape> gemm_layer_shapes(const DenseLayerShape& layer, int64_t batch,
                                              const std::string& precision) {
  const DType d_type = precision == "fp32" || precision == "tf32" ? DType::f32
                       : precision == "fp16"                      ? DType::f16
                                                                  : DType::bf16;
  if (precision != "fp32" && precision != "tf32" && precision != "bf16" && precision != "fp16" && precision != "fp8")
    throw InternalError("gemm suite: unknown precision '" + precision + "'");
  std::vector<GemmSuiteShape> out;
  auto add = [&](GemmPass pass, int64_t m, int64_t n, int64_t k, bool ta, bool tb, const std::string& epilogue) {
    GemmSuiteShape s;
    s.model = layer.model;
    s.layer = layer.layer;
    s.pass = pass;
    s.batch = batch;
    s.m = m;
    s.n = n;
    s.k = k;
    s.trans_a = ta;
    s.trans_b = tb;
    s.precision = precision;
    s.d_type = d_type;
    s.epilogue = epilogue;
    s.id = layer.model + "." + layer.layer + "." + std::string(gemm_pass_name(pass)) + ".b" + std::to_string(batch) +
           "." + precision;
    out.push_back(std::move(s));
  };
  if (precision == "fp8") {
    // Forward only (the TN layout); no fused bias (the bias type rules for FP8 outputs
    // differ from the other precisions', and the oracle times the main loop).
    if (layer.in % kFp8Multiple == 0 && layer.out % kFp8Multiple == 0)
      add(GemmPass::forward, batch, layer.out, layer.in, false, true, "none");
    return out;
  }
  add(GemmPass::forward, batch, layer.out, layer.in, false, true, layer.relu ? "relu_bias" : "bias");
  add(GemmPass::dgrad, batch, layer.in, layer.out, false, false, "none");
  add(GemmPass::wgrad, layer.out, layer.in, batch, true, false, "none");
  return out;
}

std::vector<GemmSuiteShape> gemm_suite() {
  // bf16 and fp8 (the precisions of a tuned run) at every batch; tf32, fp16 and fp32 (the
  // slow SIMT pipe, a fallback) at 1K, 8K and 64K. That keeps the oracle's run on one GPU to
  // minutes (docs/perf_model.md). A GEMM two models share (DCNv2 reuses
  // DLRM's bottom MLP and most of its top) is listed once, under the first model's id.
  const std::set<int64_t> some_batches = {1024, 8 * 1024, 64 * 1024};
  std::vector<GemmSuiteShape> suite;
  std::set<std::string> ids;
  std::set<std::tuple<int64_t, int64_t, int64_t, bool, bool, std::string, std::string>> gemms;
  const auto layers = gemm_suite_layers();
  for (int64_t batch = kMinBatch; batch <= kMaxBatch; batch *= 2) {
    for (const auto& layer : layers) {
      for (const char* precision : {"fp32", "tf32", "bf16", "fp16", "fp8"}) {
        const std::string p = precision;
        if ((p == "tf32" || p == "fp16" || p == "fp32") && !some_batches.count(batch)) continue;
        for (auto& s : gemm_layer_shapes(layer, batch, p)) {
          if (!gemms.insert({s.m, s.n, s.k, s.trans_a, s.trans_b, s.precision, s.epilogue}).second) continue;
          if (!ids.insert(s.id).second) throw InternalError("gemm suite: duplicate id " + s.id);
          suite.push_back(std::move(s));
        }
      }
    }
  }
  return suite;
}

}  // namespace hetrec::gemm_perf::gemm_perf
