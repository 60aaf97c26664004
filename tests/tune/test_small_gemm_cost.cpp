// The small GEMMs as a tuning problem: the spaces, the MLP layers' GEMMs, the static
// rules, the floor (worked by hand for the H200 description) and the bandwidth-bound
// claim, and the prediction's order.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "hw/hardware.h"
#include "tunable/small_gemm/small_gemm_cost.h"

namespace hetrec::tune {
namespace {

using kernels::SmallGemmEpilogue;
using kernels::SmallGemmKind;
using kernels::SmallGemmShape;

Hardware h200() { return load_hardware_by_name("h200_sxm", std::string(HETREC_SOURCE_DIR) + "/hw"); }

SmallGemmShape shape(SmallGemmKind kind, int narrow, int wide, bool flag, DType t = DType::f32,
                     SmallGemmEpilogue e = SmallGemmEpilogue::none) {
  SmallGemmShape s;
  s.kind = kind;
  s.narrow = narrow;
  s.wide = wide;
  s.flag = flag;
  s.operand = t;
  s.epilogue = e;
  return s;
}

SmallGemmWorkload workload(const SmallGemmShape& s, int64_t m = 65536) { return {s, m}; }

ParameterSet params(int vec, int lanes, int rows, int unroll, int split) {
  return {{"vec", vec}, {"lanes", lanes}, {"rows_per_block", rows}, {"unroll", unroll}, {"split", split}};
}

TEST(SmallGemmCost, SpacesAndConversions) {
  EXPECT_EQ(enumerate(small_gemm_space(SmallGemmKind::rows)).size(), 4u * 6 * 6 * 3);
  EXPECT_EQ(enumerate(small_gemm_space(SmallGemmKind::outer)).size(), 3u * 4 * 4);
  EXPECT_EQ(enumerate(small_gemm_space(SmallGemmKind::reduce)).size(), 4u * 4 * 3 * 5);
  const kernels::SmallGemmVariant v{2, 16, 4, 1, 1};
  EXPECT_EQ(to_small_gemm_variant(small_gemm_parameters(v)), v);
  EXPECT_EQ(small_gemm_parameters(v), params(2, 16, 4, 1, 1));
  ParameterSet missing = params(2, 16, 4, 1, 1);
  missing.erase("split");
  EXPECT_THROW(to_small_gemm_variant(missing), ConfigError);
  ParameterSet extra = params(2, 16, 4, 1, 1);
  extra["block_threads"] = 64;
  EXPECT_THROW(to_small_gemm_variant(extra), ConfigError);
}

TEST(SmallGemmCost, TheMlpsNarrowLayersAndTheirGemms) {
  // DLRM-DCNv2's bottom MLP 13-512-256-128 and top MLP ...-256-1.
  const auto bottom = small_gemm_mlp_gemms("bottom_mlp", 13, {512, 256, 128}, true, false, DType::f32);
  ASSERT_EQ(bottom.size(), 2u);  // no input gradient of the dense features
  EXPECT_EQ(bottom[0].role, "bottom_mlp.0 forward");
  EXPECT_EQ(bottom[0].shape, shape(SmallGemmKind::outer, 13, 512, true, DType::f32, SmallGemmEpilogue::relu_bias));
  EXPECT_EQ(bottom[1].shape, shape(SmallGemmKind::reduce, 13, 512, false));
  const auto with_dx = small_gemm_mlp_gemms("bottom_mlp", 13, {512, 256, 128}, true, true, DType::bf16);
  ASSERT_EQ(with_dx.size(), 3u);
  EXPECT_EQ(with_dx[2].shape, shape(SmallGemmKind::rows, 13, 512, false, DType::bf16));
  const auto top = small_gemm_mlp_gemms("top_mlp", 3456, {1024, 1024, 512, 256, 1}, false, true, DType::f32);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].role, "top_mlp.4 forward");
  EXPECT_EQ(top[0].layer, 4);
  EXPECT_EQ(top[0].shape, shape(SmallGemmKind::rows, 1, 256, true, DType::f32, SmallGemmEpilogue::bias));
  EXPECT_EQ(top[1].shape, shape(SmallGemmKind::reduce, 1, 256, true));
  EXPECT_EQ(top[2].shape, shape(SmallGemmKind::outer, 1, 256, false));
  EXPECT_EQ(top[0].shape.key(), "rows n=1 k=256 B^T fp32 bias");
  EXPECT_EQ(bottom[1].shape.key(), "reduce narrow=13 wide=512 C=wide^T*narrow fp32");
}

TEST(SmallGemmCost, FloorIsTheBytesAtHbmBandwidthAndTheShapesAreBandwidthBound) {
  const Hardware hw = h200();
  // The 1-wide logit layer's forward: A read (65536 x 256 fp32), w and the bias read, y written.
  const SmallGemmWorkload gemv = workload(shape(SmallGemmKind::rows, 1, 256, true, DType::f32, SmallGemmEpilogue::bias));
  const double bytes = 65536.0 * 256 * 4 + 256 * 4 + 65536.0 * 4 + 4;
  EXPECT_DOUBLE_EQ(small_gemm_bytes(gemv), bytes);
  EXPECT_DOUBLE_EQ(small_gemm_flops(gemv), 2.0 * 65536 * 256);
  EXPECT_NEAR(small_gemm_floor_us(hw, gemv), bytes / (hw.hbm_tbs * 1e12) * 1e6, 1e-9);
  // The weight gradient of the 13-wide layer: both operands read, C written once.
  const SmallGemmWorkload wgrad = workload(shape(SmallGemmKind::reduce, 13, 512, false, DType::bf16));
  EXPECT_DOUBLE_EQ(small_gemm_bytes(wgrad), 65536.0 * (13 + 512) * 2 + 13 * 512 * 4);
  // Every GEMM of the narrow layers is below the fp32 ridge (FLOPs per byte the device
  // can feed), so its floor is the bandwidth term.
  const double ridge = hw.dense_tflops.fp32 / hw.hbm_tbs;
  for (DType t : {DType::f32, DType::bf16})
    for (const auto& list : {small_gemm_mlp_gemms("b", 13, {512, 256, 128}, true, true, t),
                             small_gemm_mlp_gemms("t", 3456, {1024, 512, 256, 1}, false, true, t)})
      for (const auto& g : list) {
        const SmallGemmWorkload w = workload(g.shape);
        EXPECT_LT(small_gemm_intensity(w), ridge) << g.shape.key();
        EXPECT_NEAR(small_gemm_floor_us(hw, w), small_gemm_bytes(w) / (hw.hbm_tbs * 1e12) * 1e6, 1e-9);
      }
}

TEST(SmallGemmCost, StaticRules) {
  const Hardware hw = h200();
  const SmallGemmWorkload gemv = workload(shape(SmallGemmKind::rows, 1, 256, true, DType::f32, SmallGemmEpilogue::bias));
  EXPECT_EQ(small_gemm_static_problem(hw, gemv, params(4, 8, 8, 2, 1)), "");
  // 8 floats are 32 bytes: wider than any load.
  EXPECT_EQ(small_gemm_static_problem(hw, gemv, params(8, 8, 8, 2, 1)).rfind("invalid", 0), 0u);
  // 16 threads per block cannot name a whole warp in the shuffles.
  EXPECT_EQ(small_gemm_static_problem(hw, gemv, params(4, 4, 4, 1, 1)).rfind("invalid", 0), 0u);
  // 32 lanes of 4 floats, two unrolled: fine; 32 lanes of 4 for 64 elements: idle lanes.
  EXPECT_EQ(small_gemm_static_problem(hw, workload(shape(SmallGemmKind::rows, 1, 64, true)), params(4, 32, 1, 1, 1))
                .rfind("idle", 0),
            0u);
  // Split applies to the reduce kind only.
  EXPECT_EQ(small_gemm_static_problem(hw, gemv, params(4, 8, 8, 2, 256)).rfind("invalid", 0), 0u);
  // The 13-wide input gradient: 13-float rows are not whole 16-byte vectors.
  const SmallGemmWorkload dx13 = workload(shape(SmallGemmKind::rows, 13, 512, false));
  EXPECT_EQ(small_gemm_static_problem(hw, dx13, params(4, 8, 4, 1, 1)), "");
  const SmallGemmWorkload fwd13 =
      workload(shape(SmallGemmKind::outer, 13, 510, true, DType::f32, SmallGemmEpilogue::relu_bias));
  EXPECT_EQ(small_gemm_static_problem(hw, fwd13, params(2, 1, 2, 2, 1)), "");
  EXPECT_EQ(small_gemm_static_problem(hw, fwd13, params(4, 1, 2, 2, 1)).rfind("misaligned", 0), 0u);
  // Reduce: 2048 chunks of 13 x 512 partials against 16384 rows are more than a quarter
  // of the rows' bytes again.
  const SmallGemmWorkload wgrad = workload(shape(SmallGemmKind::reduce, 13, 512, false), 16384);
  EXPECT_EQ(small_gemm_static_problem(hw, wgrad, params(4, 1, 2, 2, 128)), "");
  EXPECT_EQ(small_gemm_static_problem(hw, wgrad, params(4, 1, 2, 2, 2048)).rfind("partials", 0), 0u);
  EXPECT_EQ(small_gemm_static_problem(hw, wgrad, params(4, 2, 2, 2, 128)).rfind("invalid", 0), 0u);
  // The rows kind's staged B must fit a block's shared memory: 16 x 4096 floats do not.
  const SmallGemmWorkload wide = workload(shape(SmallGemmKind::rows, 16, 4096, true));
  EXPECT_EQ(small_gemm_static_problem(hw, wide, params(4, 8, 8, 1, 1)).rfind("invalid", 0), 0u);
  // Every default variant is valid for the engine's shapes.
  for (DType t : {DType::f32, DType::bf16})
    for (const auto& list : {small_gemm_mlp_gemms("b", 13, {512, 256, 128}, true, true, t),
                             small_gemm_mlp_gemms("t", 3456, {1024, 512, 256, 1}, false, true, t)})
      for (const auto& g : list)
        EXPECT_EQ(small_gemm_static_problem(hw, workload(g.shape),
                                            small_gemm_parameters(kernels::default_small_gemm_variant(g.shape))),
                  "")
            << g.shape.key();
}

TEST(SmallGemmCost, PredictionNeverBeatsTheFloorAndPenalisesFewLoadsInFlight) {
  const Hardware hw = h200();
  const SmallGemmWorkload gemv = workload(shape(SmallGemmKind::rows, 1, 256, true, DType::f32, SmallGemmEpilogue::bias));
  const double floor = small_gemm_floor_us(hw, gemv);
  for (const ParameterSet& p : enumerate(small_gemm_space(SmallGemmKind::rows))) {
    if (small_gemm_static_problem(hw, gemv, p).empty()) {
      EXPECT_GE(small_gemm_predicted_us(hw, gemv, p), floor);
    }
  }
  // One scalar load in flight per thread sustains less than 16-byte vectors, two deep.
  EXPECT_GT(small_gemm_predicted_us(hw, gemv, params(1, 32, 1, 1, 1)),
            small_gemm_predicted_us(hw, gemv, params(4, 8, 8, 2, 1)));
  // The reduce kind pays for its partial sums.
  const SmallGemmWorkload wgrad = workload(shape(SmallGemmKind::reduce, 13, 512, false));
  EXPECT_GT(small_gemm_predicted_us(hw, wgrad, params(4, 1, 2, 2, 1024)),
            small_gemm_predicted_us(hw, wgrad, params(4, 1, 2, 2, 128)));
}

}  // namespace
}  // namespace hetrec::tune
