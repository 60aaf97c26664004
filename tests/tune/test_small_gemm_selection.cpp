// The small-GEMM kernels as selection candidates: which GEMMs map to which kind (checked
// against the engine's own list of narrow-layer GEMMs, tune::small_gemm_mlp_gemms, through
// the shape suite's description of the same layers), which do not, and that the pick is
// the minimum of the predictions over every variant that passes the static rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>

#include "hw/hardware.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_oracle.h"
#include "gemm_perf/gemm_oracle_measurements.h"
#include "gemm_perf/gemm_suite.h"
#include "tune/small_gemm_selection.h"

namespace hetrec::tune {
namespace {

using kernels::SmallGemmKind;

Hardware h200() { return load_hardware_by_name("h200_sxm", std::string(HETREC_SOURCE_DIR) + "/hw"); }

// The suite shape as the oracle's reader turns it into a problem (its epilogue and output
// type spelled as the suite spells them).
GemmProblem suite_problem(const GemmSuiteShape& s) {
  OracleShape o;
  o.id = s.id;
  o.m = s.m, o.n = s.n, o.k = s.k;
  o.trans_a = s.trans_a, o.trans_b = s.trans_b;
  o.precision = s.precision;
  o.epilogue = s.epilogue;
  o.d_type = dtype_name(s.d_type);
  return oracle_problem(o);
}

// The suite's GEMMs of an MLP and the engine's narrow-layer list describe the same products:
// every narrow-layer GEMM of the engine maps to exactly the kind, shape and flag it lists.
TEST(SmallGemmSelection, SuiteShapesMapToTheKindsTheEngineRuns) {
  const std::vector<int64_t> widths = {13, 512, 256, 1};
  const std::vector<int> outs = {512, 256, 1};
  const auto engine = small_gemm_mlp_gemms("mlp", 13, outs, false, true, DType::f32);
  std::size_t matched = 0;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    const DenseLayerShape layer{"t", "l" + std::to_string(i), widths[i], widths[i + 1], i + 2 < widths.size()};
    for (const GemmSuiteShape& s : gemm_layer_shapes(layer, 4096, "fp32")) {
      const auto found = small_gemm_workloads(suite_problem(s));
      const tune::SmallGemmPass pass = s.pass == GemmPass::forward ? SmallGemmPass::forward
                                       : s.pass == GemmPass::wgrad ? SmallGemmPass::weight_gradient
                                                                   : SmallGemmPass::input_gradient;
      const auto it = std::find_if(engine.begin(), engine.end(), [&](const SmallGemmLayerGemm& g) {
        return g.layer == static_cast<int>(i) && g.pass == pass;
      });
      if (it == engine.end()) {
        EXPECT_TRUE(found.empty()) << s.id;
        continue;
      }
      ASSERT_EQ(found.size(), 1u) << s.id;
      EXPECT_EQ(found[0].shape, it->shape) << s.id << ": " << found[0].shape.key() << " vs " << it->shape.key();
      EXPECT_EQ(found[0].m, 4096) << s.id;
      const GemmProblem back = small_gemm_problem(found[0]);
      const GemmProblem original = suite_problem(s);
      EXPECT_EQ(describe_gemm_problem(back), describe_gemm_problem(original)) << s.id;
      ++matched;
    }
  }
  EXPECT_EQ(matched, engine.size());
}

TEST(SmallGemmSelection, GemmsTheKernelsCannotRunHaveNoWorkload) {
  GemmProblem p;
  p.m = 65536, p.n = 1, p.k = 256, p.trans_b = true;
  p.a_type = p.b_type = p.c_type = DType::f32;
  ASSERT_EQ(small_gemm_workloads(p).size(), 1u);
  GemmProblem q = p;
  q.c_type = DType::bf16;  // the kernels write fp32
  EXPECT_TRUE(small_gemm_workloads(q).empty());
  q = p, q.accumulate = true;
  EXPECT_TRUE(small_gemm_workloads(q).empty());
  q = p, q.batch = 2;
  EXPECT_TRUE(small_gemm_workloads(q).empty());
  q = p, q.n = 17;  // no dimension of at most 16
  EXPECT_TRUE(small_gemm_workloads(q).empty());
  q = p, q.a_type = q.b_type = DType::f8e4m3, q.fp8_scaling = Fp8Scaling::per_tensor;
  EXPECT_TRUE(small_gemm_workloads(q).empty());
  q = p, q.b_type = DType::bf16;  // mixed operands
  EXPECT_TRUE(small_gemm_workloads(q).empty());
  // A weight gradient with an epilogue, or A as stored with K rows, is not the reduce kind.
  GemmProblem w;
  w.m = 1, w.n = 256, w.k = 65536, w.trans_a = true;
  w.a_type = w.b_type = w.c_type = DType::f32;
  ASSERT_EQ(small_gemm_workloads(w).size(), 1u);
  EXPECT_EQ(small_gemm_workloads(w)[0].shape.kind, SmallGemmKind::reduce);
  EXPECT_TRUE(small_gemm_workloads(w)[0].shape.flag);
  w.epilogue = GemmEpilogue::bias;
  EXPECT_TRUE(small_gemm_workloads(w).empty());
  // Both N and K small: rows and outer both apply.
  GemmProblem both;
  both.m = 8192, both.n = 16, both.k = 13, both.trans_b = true;
  both.a_type = both.b_type = both.c_type = DType::f32;
  const auto two = small_gemm_workloads(both);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].shape.kind, SmallGemmKind::rows);
  EXPECT_EQ(two[1].shape.kind, SmallGemmKind::outer);
}

TEST(SmallGemmSelection, PickIsTheFastestPredictionOfEveryVariantThatPasses) {
  const Hardware hw = h200();
  GemmModelParams params;
  params.launch_overhead_us = 3.25;
  for (const auto& [m, n, k, ta, tb] : std::vector<std::tuple<int64_t, int64_t, int64_t, bool, bool>>{
           {65536, 512, 13, false, true},   // outer (13-wide first layer, forward)
           {65536, 1, 256, false, true},    // rows (logit layer, forward)
           {512, 13, 65536, true, false},   // reduce, narrow B
           {1, 256, 131072, true, false},   // reduce, narrow A
           {1024, 256, 1, false, false}}) { // outer, K = 1 (logit layer, input gradient)
    GemmProblem p;
    p.m = m, p.n = n, p.k = k, p.trans_a = ta, p.trans_b = tb;
    p.a_type = p.b_type = p.c_type = DType::f32;
    const auto pick = pick_small_gemm(hw, p, params);
    ASSERT_TRUE(pick) << describe_gemm_problem(p);
    double best = std::numeric_limits<double>::infinity();
    std::size_t passed = 0;
    for (const SmallGemmWorkload& w : small_gemm_workloads(p))
      for (const auto& v : small_gemm_variants(w.shape.kind)) {
        if (!small_gemm_static_problem(hw, w, v).empty()) continue;
        ++passed;
        best = std::min(best, small_gemm_predicted_us(hw, w, v) + small_gemm_launches(w.shape.kind) * 3.25);
      }
    EXPECT_EQ(pick->predicted, passed);
    EXPECT_DOUBLE_EQ(pick->predicted_us, best) << describe_gemm_problem(p);
    EXPECT_TRUE(small_gemm_static_problem(hw, pick->workload, pick->variant).empty());
    EXPECT_DOUBLE_EQ(pick->kernel_us, small_gemm_predicted_us(hw, pick->workload, pick->variant));
    // The ranking starts with the pick and is ordered.
    const auto ranked = rank_small_gemm(hw, p, params);
    ASSERT_EQ(ranked.size(), passed);
    EXPECT_EQ(ranked.front().variant, pick->variant);
    EXPECT_EQ(ranked.front().workload.shape, pick->workload.shape);
    for (std::size_t i = 1; i < ranked.size(); ++i) EXPECT_LE(ranked[i - 1].predicted_us, ranked[i].predicted_us);
    // Never below the floor plus the launches.
    EXPECT_GE(pick->predicted_us, small_gemm_floor_us(hw, pick->workload) +
                                      small_gemm_launches(pick->workload.shape.kind) * 3.25 - 1e-9);
  }
  GemmProblem none;
  none.m = none.n = none.k = 4096;
  none.a_type = none.b_type = none.c_type = DType::f32;
  EXPECT_FALSE(pick_small_gemm(hw, none, params));
}

}  // namespace
}  // namespace hetrec::tune
