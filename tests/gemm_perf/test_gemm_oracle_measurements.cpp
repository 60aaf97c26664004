// oracle_measurements (gemm_perf/gemm_oracle_measurements.h): the cuBLASLt oracle in the model's
// terms, on small oracles built here: the library's frame, the three kernel kinds, the
// kernel's own choices as alternatives, split-K reduction schemes, and what stays
// undescribed.
#include "gemm_perf/gemm_oracle_measurements.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "gemm_perf/gemm_model.h"
#include "gemm_perf_test_support.h"

namespace hetrec {
namespace {

using test::shipped_hardware;

// cuBLASLt's reduction-scheme bits as the oracle records them.
constexpr int kInPlace = 1, kComputeType = 2, kOutputType = 4;

struct Ids {
  int algo = 0;
  int tile_m = 0, tile_n = 0;  // the library's rows x columns (0 x 0: the kernel picks)
  int tile_k = 0, stages = 0;  // 0 stages with a tile K: "AUTO"
  int split = 1, reduction = 0;
  int cluster_m = 0, cluster_n = 0;  // 0 x 0: automatic
  bool swizzle = false;
};

OracleCandidate candidate(const Ids& ids, double median_us) {
  OracleCandidate c;
  c.algo_id = ids.algo;
  c.tile_id = ids.tile_m > 0 ? 1 : 0;  // any non-zero id: the tile shape below is what counts
  c.split_k = ids.split;
  c.reduction = ids.reduction;
  c.swizzle = ids.swizzle ? 1 : 0;
  c.median_us = c.min_us = median_us;
  c.config.tile_m = ids.tile_m;
  c.config.tile_n = ids.tile_n;
  c.config.tile_k = ids.tile_k;
  c.config.stages = ids.stages;
  c.config.cluster_m = ids.cluster_m;
  c.config.cluster_n = ids.cluster_n;
  c.config.swizzle = ids.swizzle ? 8 : 1;
  c.key = oracle_candidate_key(ids.algo, c.tile_id, ids.tile_k * 100 + ids.stages, ids.split, ids.reduction,
                               c.swizzle, ids.cluster_m * 10 + ids.cluster_n, 0);
  return c;
}

OracleShape shape(const std::string& id, const std::string& precision, int64_t m, int64_t n, int64_t k,
                  std::vector<OracleCandidate> candidates, double heuristic_us) {
  OracleShape s;
  s.id = id;
  s.m = m, s.n = n, s.k = k;
  s.trans_a = false;
  s.trans_b = true;  // the forward GEMM's layout
  s.precision = precision;
  s.epilogue = "none";
  s.d_type = precision == "fp32" || precision == "tf32" ? "fp32" : precision;
  s.heuristic_key = candidates.front().key;
  s.heuristic_index = 0;
  s.heuristic_median_us = heuristic_us;
  s.candidates = std::move(candidates);
  return s;
}

// An fp32 shape (SIMT families 20 and 16) and a bf16 shape with one kernel of each kind.
GemmOracle fixture() {
  GemmOracle o;
  o.gpu = "NVIDIA H200";
  o.shapes.push_back(shape("simt.fp32", "fp32", 4096, 512, 1024,
                           {candidate({.algo = 20, .tile_m = 128, .tile_n = 64, .tile_k = 8, .stages = 4}, 40.0),
                            candidate({.algo = 20, .tile_m = 64, .tile_n = 64, .tile_k = 8, .stages = 5}, 45.0),
                            candidate({.algo = 16}, 60.0)},
                           41.0));
  o.shapes.push_back(shape(
      "mixed.bf16", "bf16", 8192, 1024, 512,
      {candidate({.algo = 66, .tile_m = 128, .tile_n = 256, .tile_k = 64, .cluster_m = 2, .cluster_n = 1}, 20.0),
       candidate({.algo = 66, .tile_m = 192, .tile_n = 192, .tile_k = 64, .cluster_m = 1, .cluster_n = 1}, 21.0),
       candidate({.algo = 66, .tile_m = 32, .tile_n = 48, .tile_k = 64, .cluster_m = 1, .cluster_n = 1}, 19.0),
       candidate({.algo = 66, .tile_m = 32, .tile_n = 128, .tile_k = 64, .cluster_m = 1, .cluster_n = 2}, 25.0),
       candidate({.algo = 21, .tile_m = 64, .tile_n = 64, .tile_k = 32, .stages = 4, .cluster_m = 2, .cluster_n = 1},
                 30.0),
       candidate({.algo = 21, .tile_m = 16, .tile_n = 16, .tile_k = 64, .stages = 1, .split = 4,
                  .reduction = kInPlace},
                 90.0),
       candidate({.algo = 23, .tile_m = 64, .tile_n = 128, .tile_k = 32, .stages = 3, .split = 2,
                  .reduction = kOutputType},
                 35.0),
       candidate({.algo = 23, .tile_m = 64, .tile_n = 128, .tile_k = 32, .stages = 3, .split = 2,
                  .reduction = kComputeType},
                 36.0),
       candidate({.algo = 20, .tile_m = 128, .tile_n = 64, .tile_k = 8, .stages = 4}, 200.0),
       candidate({.algo = 16, .split = 1}, 300.0)},
      18.5));
  OracleShape skipped;
  skipped.id = "skipped.bf16";
  skipped.skipped = "no heuristic algorithm";
  o.shapes.push_back(skipped);
  return o;
}

const MeasuredCandidate& find(const MeasuredShape& s, int family, int tile_m, int tile_n) {
  for (const MeasuredCandidate& c : s.candidates)
    if (c.config.family == family && c.config.tile_m == tile_m && c.config.tile_n == tile_n) return c;
  ADD_FAILURE() << "no candidate a" << family << " " << tile_m << "x" << tile_n << " in " << s.id;
  return s.candidates.front();
}

TEST(GemmOracleMeasurements, TheLibraryFrameExchangesMAndNAndKeepsKContiguity) {
  GemmProblem e;
  e.m = 65536, e.n = 13, e.k = 512;
  e.a_type = DType::f32, e.b_type = DType::bf16;  // distinct, to see them exchanged
  for (bool trans_a : {false, true}) {
    for (bool trans_b : {false, true}) {
      e.trans_a = trans_a, e.trans_b = trans_b;
      const GemmProblem l = library_frame(e);
      EXPECT_EQ(l.m, 13);
      EXPECT_EQ(l.n, 65536);
      EXPECT_EQ(l.k, 512);
      EXPECT_EQ(l.a_type, DType::bf16);
      EXPECT_EQ(l.b_type, DType::f32);
      // GemmProblem's A is K-contiguous unless trans_a, its B unless !trans_b. The library's
      // A is the engine's B, its B the engine's A.
      const bool engine_a_k_contiguous = !e.trans_a, engine_b_k_contiguous = e.trans_b;
      EXPECT_EQ(!l.trans_a, engine_b_k_contiguous);
      EXPECT_EQ(l.trans_b, engine_a_k_contiguous);
    }
  }
}

TEST(GemmOracleMeasurements, KernelKindsFromWhatTheLibraryExposes) {
  const Hardware hw = shipped_hardware("h200_sxm");
  const OracleConversion c = oracle_measurements(hw, fixture());
  EXPECT_EQ(c.simt_families, (std::vector<int>{16, 20}));  // offered for fp32 compute
  ASSERT_EQ(c.shapes.size(), 2u);
  EXPECT_EQ(c.skipped_shapes, 1u);
  const MeasuredShape& s = c.shapes[1];
  // The library's frame: M is the engine's N.
  EXPECT_EQ(s.problem.m, 1024);
  EXPECT_EQ(s.problem.n, 8192);

  // Hopper warpgroup ("K x AUTO" stages): wgmma, two consumer warpgroups, the cluster as given
  // (TMA multicast), the deepest pipeline that fits, and both launch orders.
  const MeasuredCandidate& hopper = find(s, 66, 128, 256);
  EXPECT_EQ(hopper.config.inst_m, 64);
  EXPECT_EQ(hopper.config.inst_n, 256);
  EXPECT_EQ(hopper.config.warps_m, 8);
  EXPECT_EQ(hopper.config.cluster_m, 2);
  EXPECT_EQ(hopper.config.cluster_n, 1);
  EXPECT_GE(hopper.config.stages, 2);
  GemmConfig deeper = hopper.config;
  ++deeper.stages;
  EXPECT_FALSE(gemm_kernel_traits(hw, GemmModelParams{}, MatrixPrecision::bf16, deeper).feasible);
  ASSERT_EQ(hopper.alternatives.size(), 1u);
  EXPECT_NE(hopper.alternatives[0].raster, hopper.config.raster);
  // A tile of three instruction rows splits over two warpgroups along N.
  const MeasuredCandidate& wide = find(s, 66, 192, 192);
  EXPECT_EQ(wide.config.warps_m, 4);
  EXPECT_EQ(wide.config.warps_n, 2);
  EXPECT_EQ(wide.config.inst_n, 96);

  // Ampere generation (fixed stages): warp-level mma.sync, 2 x 2 warps of 32 x 32, no
  // multicast whatever cluster the launch asked for, launched along M.
  const MeasuredCandidate& ampere = find(s, 21, 64, 64);
  EXPECT_EQ(ampere.config.inst_m, 16);
  EXPECT_EQ(ampere.config.inst_n, 8);
  EXPECT_EQ(ampere.config.inst_k, 16);
  EXPECT_EQ(ampere.config.warps_m, 2);
  EXPECT_EQ(ampere.config.warps_n, 2);
  EXPECT_EQ(ampere.config.stages, 4);
  EXPECT_EQ(ampere.config.cluster_m * ampere.config.cluster_n, 1);
  EXPECT_EQ(ampere.config.raster, GemmRaster::along_m);
  EXPECT_TRUE(ampere.alternatives.empty());
  // A single-stage 16 x 16 kernel is one warp.
  const MeasuredCandidate& small = find(s, 21, 16, 16);
  EXPECT_EQ(small.config.stages, 1);
  EXPECT_EQ(small.config.warps_m * small.config.warps_n, 1);

  // SIMT family on bf16 operands: the fp32 FMA (its pipe is fp32).
  const MeasuredCandidate& simt = find(s, 20, 128, 64);
  EXPECT_EQ(simt.config.inst_m, 1);
  const GemmKernelTraits t = gemm_kernel_traits(hw, GemmModelParams{}, MatrixPrecision::bf16, simt.config);
  ASSERT_TRUE(t.feasible) << t.infeasible_reason;
  EXPECT_EQ(t.pipe, MatrixPrecision::fp32);
  EXPECT_EQ(t.a_bytes, 2.0);  // still bf16 operands
}

TEST(GemmOracleMeasurements, SplitKReductionSchemes) {
  const OracleConversion c = oracle_measurements(shipped_hardware("h200_sxm"), fixture());
  const MeasuredShape& s = c.shapes[1];
  int seen = 0;
  for (const MeasuredCandidate& m : s.candidates) {
    if (m.config.split_k <= 1) {
      EXPECT_EQ(m.config.decomposition, GemmDecomposition::data_parallel);
      continue;
    }
    EXPECT_EQ(m.config.decomposition, GemmDecomposition::split_k);
    GemmReduction expected = GemmReduction::workspace_fp32;
    if (m.config.family == 21) expected = GemmReduction::in_place;
    else if (m.median_us == 35.0) expected = GemmReduction::workspace_output;
    else if (m.median_us != 36.0) continue;
    EXPECT_EQ(m.config.reduction, expected) << m.name;
    ++seen;
  }
  EXPECT_EQ(seen, 3);
}

TEST(GemmOracleMeasurements, KernelChosenTilesRunAsTheBestOfTheirKindsMenu) {
  const Hardware hw = shipped_hardware("h200_sxm");
  const OracleConversion c = oracle_measurements(hw, fixture());
  EXPECT_EQ(c.kernel_chosen_tiles, 2u);  // family 16 on both shapes
  for (const MeasuredShape& s : c.shapes) {
    const auto it = std::find_if(s.candidates.begin(), s.candidates.end(),
                                 [](const MeasuredCandidate& m) { return m.config.family == 16; });
    ASSERT_NE(it, s.candidates.end()) << s.id;
    // The SIMT menu: the described SIMT tiles of the oracle (128x64x8x4 and 64x64x8x5).
    std::vector<GemmConfig> all = {it->config};
    all.insert(all.end(), it->alternatives.begin(), it->alternatives.end());
    ASSERT_EQ(all.size(), 2u) << s.id;
    for (const GemmConfig& g : all) {
      EXPECT_EQ(g.family, 16);
      EXPECT_EQ(g.inst_m, 1);
      EXPECT_EQ(g.tile_k, 8);
      EXPECT_TRUE((g.tile_m == 128 && g.stages == 4) || (g.tile_m == 64 && g.stages == 5)) << to_string(g);
    }
    // Predicted as the fastest of them.
    const GemmModelParams params = test::shipped_params(hw);
    MeasuredShape one = s;
    one.candidates = {*it};
    const ShapeSelection sel = select_measured(hw, params, one);
    ASSERT_EQ(sel.selected, 0);
    double best = std::numeric_limits<double>::infinity();
    for (const GemmConfig& g : all) best = std::min(best, predict_gemm(hw, s.problem, g, params).time_us);
    std::vector<std::size_t> idx = {0};
    const std::vector<MeasuredShape> shapes = {one};
    EXPECT_NEAR(evaluate_selection(hw, params, shapes, idx).mean_abs_log_error,
                std::abs(std::log(best / it->median_us)), 1e-12);
  }
}

TEST(GemmOracleMeasurements, UndescribedKernelsStillSetTheOracle) {
  const OracleConversion c = oracle_measurements(shipped_hardware("h200_sxm"), fixture());
  const MeasuredShape& s = c.shapes[1];
  // The 32 x 48 warpgroup tile cannot be built from m64 instructions either way round: left
  // out, but its 19.0 us, below every described candidate, is the oracle (the heuristic's
  // 18.5 even more).
  EXPECT_EQ(c.undescribed, 1u);
  EXPECT_EQ(c.oracle_undescribed, 1u);
  EXPECT_TRUE(std::none_of(s.candidates.begin(), s.candidates.end(),
                           [](const MeasuredCandidate& m) { return m.config.tile_n == 48; }));
  EXPECT_EQ(s.best_measured_us, 18.5);
  EXPECT_EQ(c.heuristic_faster, 1u);  // on the bf16 shape; the fp32 one's heuristic is slower
  EXPECT_EQ(c.shapes[0].best_measured_us, 40.0);
}

// A warpgroup tile with fewer rows than the instruction's 64 but a multiple of 64 columns runs
// the transposed product: described with tile and cluster exchanged, and predicted on
// transposed_product of the shape (as the calibration and the engine's selection do).
TEST(GemmOracleMeasurements, ThinWarpgroupTilesRunTheTransposedProduct) {
  const Hardware hw = shipped_hardware("h200_sxm");
  const OracleConversion c = oracle_measurements(hw, fixture());
  const MeasuredShape& s = c.shapes[1];
  const auto it = std::find_if(s.candidates.begin(), s.candidates.end(),
                               [](const MeasuredCandidate& m) { return m.median_us == 25.0; });
  ASSERT_NE(it, s.candidates.end());
  EXPECT_TRUE(it->transposed);
  EXPECT_EQ(it->config.tile_m, 128);
  EXPECT_EQ(it->config.tile_n, 32);
  EXPECT_EQ(it->config.cluster_m, 2);
  EXPECT_EQ(it->config.cluster_n, 1);
  const auto transposed_count = std::count_if(s.candidates.begin(), s.candidates.end(),
                                              [](const MeasuredCandidate& m) { return m.transposed; });
  EXPECT_EQ(transposed_count, 1);
  const GemmModelParams params;
  const double t = predict_best_of(hw, params, transposed_product(s.problem), it->config, it->alternatives);
  EXPECT_GT(t, 0.0);

  // describe_library_configs (the engine's path) describes the shape's list the same way.
  const GemmOracle o = fixture();
  const std::vector<int> simt = c.simt_families;
  const auto described = describe_library_configs(hw, s.problem, o.shapes[1].candidates, simt);
  ASSERT_EQ(described.size(), o.shapes[1].candidates.size());
  std::size_t transposed = 0, undescribed = 0;
  for (const auto& d : described) {
    if (!d) {
      ++undescribed;
      continue;
    }
    if (d->transposed) {
      ++transposed;
      EXPECT_EQ(d->config, it->config);
    }
  }
  EXPECT_EQ(transposed, 1u);
  EXPECT_EQ(undescribed, 1u);  // the 32 x 48 tile
}

}  // namespace
}  // namespace hetrec
