#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "gemm_perf/gemm_candidates.h"
#include "gemm_perf/gemm_model.h"
#include "gemm_perf/gemm_selector.h"
#include "gemm_perf_test_support.h"

using namespace hetrec;
using namespace hetrec::test;

namespace {

const char* const kAllGpus[] = {"a100_sxm_40gb", "h100_sxm", "h200_sxm", "b200", "mi300x", "mi325x", "mi350x", "mi355x"};

// A configuration that runs one CTA per unit, data parallel.
GemmConfig hopper_128x256() {
  GemmConfig c;
  c.tile_m = 128, c.tile_n = 256, c.tile_k = 64;
  c.inst_m = 64, c.inst_n = 256, c.inst_k = 16;
  c.warps_m = 8, c.warps_n = 1, c.stages = 4;
  return c;
}

GemmConfig cdna3_256x256() {
  GemmConfig c;
  c.tile_m = 256, c.tile_n = 256, c.tile_k = 32;
  c.inst_m = 32, c.inst_n = 32, c.inst_k = 8;
  c.warps_m = 2, c.warps_n = 2, c.stages = 2;
  return c;
}

// An Ampere-generation library kernel on Hopper: warp-level mma.sync, 2 x 2 warps.
GemmConfig mma_sync_64x64(int stages, int family = 21) {
  GemmConfig c;
  c.tile_m = 64, c.tile_n = 64, c.tile_k = 32;
  c.inst_m = 16, c.inst_n = 8, c.inst_k = 16;
  c.warps_m = 2, c.warps_n = 2, c.stages = stages;
  c.family = family;
  return c;
}

GemmProblem square(int64_t n, DType t = DType::bf16) {
  GemmProblem p;
  p.m = p.n = p.k = n;
  p.a_type = p.b_type = p.c_type = t;
  return p;
}

// Work items dealt round robin to XCDs, then in turn to each XCD's units: the most any
// unit receives (a direct count, for the model's closed form).
double simulated_waves(int64_t work, int units, int xcds) {
  std::vector<int64_t> per_unit(units, 0);
  std::vector<int64_t> next_in_xcd(xcds, 0);
  const int per_xcd = units / xcds;
  for (int64_t i = 0; i < work; ++i) {
    const int x = int(i % xcds);
    per_unit[x * per_xcd + next_in_xcd[x]++ % per_xcd] += 1;
  }
  return double(*std::max_element(per_unit.begin(), per_unit.end()));
}

}  // namespace

TEST(GemmModel, MonotoneInK) {
  Rng rng(21);
  for (const char* name : kAllGpus) {
    SCOPED_TRACE(name);
    const Hardware hw = shipped_hardware(name);
    const GemmModelParams params = shipped_params(hw);
    const GemmSelector selector = GemmSelector::for_hardware(hw, params);
    for (int trial = 0; trial < 25; ++trial) {
      GemmProblem small = random_problem(rng, hw, 8192);
      GemmProblem large = small;
      large.k = small.k + 1 + int64_t(rng.below(uint64_t(small.k) * 3 + 64));
      const std::vector<GemmConfig> candidates = gemm_candidates(hw, gemm_precision(small, hw));
      ASSERT_FALSE(candidates.empty());
      const GemmConfig& c = candidates[rng.below(candidates.size())];
      const double t_small = predict_gemm(hw, small, c, params).time_us;
      const double t_large = predict_gemm(hw, large, c, params).time_us;
      EXPECT_LE(t_small, t_large) << describe_gemm_problem(small) << " K -> " << large.k << " with "
                                  << to_string(c);
      EXPECT_LE(selector.select(small).estimate.time_us, selector.select(large).estimate.time_us)
          << describe_gemm_problem(small) << " K -> " << large.k;
    }
  }
}

TEST(GemmModel, LargeSquareBf16OnH200IsInTheMeasuredBand) {
  const Hardware hw = shipped_hardware("h200_sxm");
  const GemmSelector selector = GemmSelector::for_hardware(hw, shipped_params(hw));
  Rng rng(22);
  std::vector<int64_t> sizes = {8192, 12288, 16384};
  for (int i = 0; i < 3; ++i) sizes.push_back(6144 + 256 * int64_t(rng.below(41)));
  for (int64_t n : sizes) {
    const RankedConfig best = selector.select(square(n));
    EXPECT_GE(best.estimate.tflops, 700.0) << n << ": " << to_string(best.config);
    EXPECT_LE(best.estimate.tflops, 990.0) << n << ": " << to_string(best.config);
    EXPECT_EQ(best.estimate.limiter, GemmLimiter::math) << n;
  }
  // Measured on the H200: 790 TFLOP/s for an 8192^3 bf16 GEMM (bench/results/probe-20261130-h200.json).
  const double t8k = selector.select(square(8192)).estimate.tflops;
  EXPECT_GE(t8k, hw.measured->bf16_gemm_tflops_low.value() * 0.97);
  EXPECT_LE(t8k, hw.measured->bf16_gemm_tflops_high.value() * 1.03);
}

TEST(GemmModel, AmpereRunsMmaSyncAtTheFullRate) {
  // On the A100, mma.sync is the newest matrix instruction: its candidates are CUTLASS
  // sm80-style tiles of warps, with no previous-generation discount, and no fp8.
  const Hardware hw = shipped_hardware("a100_sxm_40gb");
  const GemmModelParams params = shipped_params(hw);
  EXPECT_TRUE(gemm_candidates(hw, MatrixPrecision::fp8).empty());
  for (MatrixPrecision p : {MatrixPrecision::bf16, MatrixPrecision::fp16, MatrixPrecision::tf32}) {
    SCOPED_TRACE(precision_name(p));
    const std::vector<GemmConfig> candidates = gemm_candidates(hw, p);
    ASSERT_FALSE(candidates.empty());
    for (const GemmConfig& c : candidates) {
      const GemmKernelTraits t = gemm_kernel_traits(hw, params, p, c);
      ASSERT_TRUE(t.feasible) << to_string(c);
      EXPECT_TRUE(t.warp_scope) << to_string(c);
      EXPECT_FALSE(t.legacy_instruction) << to_string(c);
      EXPECT_EQ(c.cluster_m * c.cluster_n, 1) << to_string(c);
    }
  }
  // A large square bf16 GEMM is math-bound below the datasheet's dense 312 TFLOP/s, at the
  // sm_80 starting efficiency's share of it less the per-tile overheads.
  const GemmSelector selector = GemmSelector::for_hardware(hw, params);
  const RankedConfig best = selector.select(square(8192));
  EXPECT_EQ(best.estimate.limiter, GemmLimiter::math) << to_string(best.config);
  EXPECT_LE(best.estimate.tflops, hw.dense_tflops.bf16 * params.matrix_efficiency.bf16);
  EXPECT_GE(best.estimate.tflops, hw.dense_tflops.bf16 * params.matrix_efficiency.bf16 * 0.9);
}

TEST(GemmModel, MemoryBoundGemvPredictsBytesOverBandwidth) {
  Rng rng(23);
  for (const char* name : kAllGpus) {
    SCOPED_TRACE(name);
    const Hardware hw = shipped_hardware(name);
    const GemmModelParams params = shipped_params(hw);
    const GemmSelector selector = GemmSelector::for_hardware(hw, params);
    for (int trial = 0; trial < 4; ++trial) {
      GemmProblem p;
      p.m = log_uniform(rng, 4096, 32768);
      p.k = log_uniform(rng, 4096, 32768);
      p.n = 1;
      const double bytes = double(p.m) * p.k * 2 + double(p.k) * 2 + double(p.m) * 2;
      const double ideal_us = bytes / (hw.hbm_tbs * 1e12) * 1e6;
      const RankedConfig best = selector.select(p);
      const double kernel_us = best.estimate.time_us - best.estimate.launch_us;
      EXPECT_GE(kernel_us, ideal_us) << describe_gemm_problem(p);
      EXPECT_LE(kernel_us, 1.3 * ideal_us) << describe_gemm_problem(p) << ": " << to_string(best.config);
      // HBM, or the loads in flight that a grid of fewer CTAs than slots can keep going
      // (Little's law; B200's 8 TB/s needs more bytes in flight per unit than one CTA holds).
      EXPECT_TRUE(best.estimate.limiter == GemmLimiter::dram || best.estimate.limiter == GemmLimiter::latency)
          << describe_gemm_problem(p) << ": " << limiter_name(best.estimate.limiter);
    }
  }
}

TEST(GemmModel, OneTileMoreThanUnitsCostsTwoWaves) {
  struct Case {
    const char* gpu;
    GemmConfig config;
    int64_t tile_m, tile_n;
  };
  for (const Case& c :
       {Case{"h200_sxm", hopper_128x256(), 128, 256}, Case{"mi300x", cdna3_256x256(), 256, 256}}) {
    SCOPED_TRACE(c.gpu);
    const Hardware hw = shipped_hardware(c.gpu);
    const GemmModelParams params = shipped_params(hw);
    ASSERT_EQ(gemm_kernel_traits(hw, params, MatrixPrecision::bf16, c.config).ctas_per_unit, 1);
    // Grids of exactly `units` tiles and of `units + 1` tiles (a prime factorisation each).
    auto grid_for = [&](int64_t tiles) {
      int64_t rows = 1;
      for (int64_t r = 2; r * r <= tiles; ++r)
        if (tiles % r == 0) rows = r;
      GemmProblem p = square(1);
      p.m = rows * c.tile_m, p.n = tiles / rows * c.tile_n, p.k = 16384;
      return p;
    };
    const GemmEstimate full = predict_gemm(hw, grid_for(hw.compute_units), c.config, params);
    const GemmEstimate over = predict_gemm(hw, grid_for(hw.compute_units + 1), c.config, params);
    EXPECT_EQ(full.tiles, hw.compute_units);
    EXPECT_EQ(over.tiles, hw.compute_units + 1);
    EXPECT_DOUBLE_EQ(full.waves, 1.0);
    EXPECT_DOUBLE_EQ(over.waves, 2.0);
    EXPECT_GT(over.unit_us / full.unit_us, 1.8);
    EXPECT_LT(over.unit_us / full.unit_us, 2.05);
    EXPECT_GT(over.time_us / full.time_us, 1.7);
  }
}

// Clusters of 4 CTAs fill only 120 of the H200's 132 SMs (its measured cluster
// occupancy), so 132 such tiles take two waves where 2-CTA clusters take one.
TEST(GemmModel, ClustersThatLeaveSmsIdleTakeMoreWaves) {
  const Hardware hw = shipped_hardware("h200_sxm");
  const GemmModelParams params = shipped_params(hw);
  GemmProblem p = square(1);
  p.m = 128 * 12, p.n = 256 * 11, p.k = 4096;  // 12 x 11 = 132 tiles of 128x256
  GemmConfig pair = hopper_128x256();
  pair.cluster_m = 2, pair.cluster_n = 1;
  GemmConfig quad = pair;
  quad.cluster_m = 4;
  const GemmEstimate two = predict_gemm(hw, p, pair, params), four = predict_gemm(hw, p, quad, params);
  ASSERT_EQ(two.ctas_per_unit, 1);
  EXPECT_EQ(two.tiles, 132);
  EXPECT_EQ(four.tiles, 132);
  EXPECT_DOUBLE_EQ(two.waves, 1.0);
  EXPECT_DOUBLE_EQ(four.waves, 2.0);
  EXPECT_GT(four.unit_us, 1.5 * two.unit_us);
}

// A SIMT thread's fragment loads and loop take issue slots from its FMAs: a 32 x 64 warp
// tile gives each thread an 8 x 8 fragment, 64 FMAs beside 2 + 2 vector loads and the
// extra issues per k step; a 32 x 32 one a 4 x 8 fragment, 32 FMAs beside 1 + 2 loads.
TEST(GemmModel, SimtFragmentsShareTheIssueWithTheirLoads) {
  GemmConfig c;
  c.tile_m = 128, c.tile_n = 128, c.tile_k = 8;
  c.inst_m = c.inst_n = c.inst_k = 1;
  c.warps_m = 4, c.warps_n = 2, c.stages = 3;
  EXPECT_DOUBLE_EQ(simt_issue_share(c, 32), 64.0 / (64.0 + 4.0 + kSimtExtraIssuesPerK));
  c.tile_n = 64;  // 32 x 32 warp tiles
  EXPECT_DOUBLE_EQ(simt_issue_share(c, 32), 32.0 / (32.0 + 3.0 + kSimtExtraIssuesPerK));
  // Per FLOP the smaller fragment is slower, in the model's main loop too.
  const Hardware hw = shipped_hardware("h200_sxm");
  const GemmModelParams params = shipped_params(hw);
  GemmProblem p = square(1);
  p.a_type = p.b_type = p.c_type = p.compute_type = DType::f32;
  p.m = p.n = 4096, p.k = 4096;
  GemmConfig big = c;
  big.tile_n = 128;
  const GemmEstimate small_tiles = predict_gemm(hw, p, c, params), big_tiles = predict_gemm(hw, p, big, params);
  EXPECT_NEAR(small_tiles.math_us / big_tiles.math_us,
              simt_issue_share(big, 32) / simt_issue_share(c, 32), 1e-9 * small_tiles.math_us);
}

TEST(GemmModel, WavesMatchADirectCountOfTheDispatch) {
  Rng rng(24);
  for (const char* name : {"h200_sxm", "a100_sxm_40gb", "mi300x", "mi355x", "b200"}) {
    SCOPED_TRACE(name);
    const Hardware hw = shipped_hardware(name);
    const GemmModelParams params = shipped_params(hw);
    const std::vector<GemmConfig> candidates = gemm_candidates(hw, MatrixPrecision::bf16);
    for (int trial = 0; trial < 40; ++trial) {
      const GemmConfig& c = candidates[rng.below(candidates.size())];
      if (c.decomposition == GemmDecomposition::stream_k) continue;
      GemmProblem p = square(1);
      p.m = log_uniform(rng, 1, 20000), p.n = log_uniform(rng, 1, 20000), p.k = log_uniform(rng, 1, 20000);
      const GemmEstimate e = predict_gemm(hw, p, c, params);
      const int64_t tiles_m = (p.m + c.tile_m - 1) / c.tile_m, tiles_n = (p.n + c.tile_n - 1) / c.tile_n;
      const int64_t tiles = ((tiles_m + c.cluster_m - 1) / c.cluster_m * c.cluster_m) *
                            ((tiles_n + c.cluster_n - 1) / c.cluster_n * c.cluster_n);
      const int64_t k_iters = (p.k + c.tile_k - 1) / c.tile_k;
      const int64_t slices = c.split_k;  // every slice is launched, even an empty one
      EXPECT_EQ(e.tiles, tiles);
      EXPECT_EQ(e.work_units, tiles * slices);
      if (tiles * slices <= 200000) {
        EXPECT_DOUBLE_EQ(e.waves, simulated_waves(tiles * slices,
                                                  hw.units_for_clusters(c.cluster_m * c.cluster_n, e.ctas_per_unit),
                                                  hw.xcds));
      }
      // Padding and main-loop math against a plain double-precision recomputation.
      const double padded = double(tiles) * k_iters * 2.0 * c.tile_m * c.tile_n * c.tile_k;
      EXPECT_NEAR(e.padding_efficiency, p.flops() / padded, 1e-12);
      // The unit runs at its published clock under a dense GEMM where one is given.
      const double clock_share = hw.matrix_clock_mhz.bf16 > 0.0 ? hw.matrix_clock_mhz.bf16 / hw.clock_mhz : 1.0;
      const double iter_math_us =
          2.0 * c.tile_m * c.tile_n * c.tile_k /
          (hw.dense_tflops.bf16 * 1e12 / hw.compute_units * clock_share * params.matrix_efficiency.bf16) * 1e6;
      const double iters_per_work = double((k_iters + slices - 1) / slices);
      // Warp-scope kernels (MFMA) on a unit with fewer math warps resident than its
      // issue slots run at that share of the unit's rate.
      double issue_share = 1.0;
      for (const MatrixInstruction& mi : hw.matrix_instructions)
        if (mi.precision == MatrixPrecision::bf16 && mi.m == c.inst_m && mi.k == c.inst_k &&
            mi.scope == IssueScope::warp) {
          const double resident = std::min<double>(e.ctas_per_unit, e.waves);
          issue_share = std::min(1.0, resident * c.warps_m * c.warps_n / double(kIssueSlotsPerUnit));
        }
      EXPECT_NEAR(e.math_us, e.waves * iters_per_work * iter_math_us / issue_share, 1e-9 * e.math_us);
    }
  }
}

TEST(GemmModel, TimeCoversItsPartsAndTrafficCoversTheInputs) {
  Rng rng(25);
  for (const char* name : kAllGpus) {
    SCOPED_TRACE(name);
    const Hardware hw = shipped_hardware(name);
    const GemmModelParams params = shipped_params(hw);
    for (int trial = 0; trial < 40; ++trial) {
      const GemmProblem p = random_problem(rng, hw);
      const MatrixPrecision precision = gemm_precision(p, hw);
      const std::vector<GemmConfig> candidates = gemm_candidates(hw, precision);
      const GemmConfig& c = candidates[rng.below(candidates.size())];
      const GemmEstimate e = predict_gemm(hw, p, c, params);
      const double bytes = precision_operand_bytes(precision);
      EXPECT_GE(e.dram_bytes, gemm_compulsory_bytes(p, bytes, bytes));
      const double parts =
          e.launch_us + std::max({e.unit_us, e.dram_us, e.llc_us}) + e.reduction_us + e.transpose_us;
      EXPECT_NEAR(e.time_us, parts, 1e-9 * parts);
      EXPECT_GE(e.unit_us, std::max({e.math_us, e.feed_us, e.l2_us, e.latency_us}) * (1 - 1e-12));
      EXPECT_NEAR(e.tflops, p.flops() / e.time_us * 1e-6, 1e-9 * e.tflops);
      EXPECT_GT(e.padding_efficiency, 0.0);
      EXPECT_LE(e.padding_efficiency, 1.0 + 1e-12);
      // The schedule's lower bound never exceeds the prediction (the selector prunes with it).
      const GemmKernelTraits t = gemm_kernel_traits(hw, params, precision, c);
      EXPECT_LE(schedule_gemm(hw, params, p, c, t).lower_bound_us, e.time_us);
    }
  }
}

TEST(GemmModel, EpilogueAndAccumulateOnlyAddTime) {
  const Hardware hw = shipped_hardware("h200_sxm");
  const GemmModelParams params = shipped_params(hw);
  Rng rng(26);
  for (int trial = 0; trial < 20; ++trial) {
    GemmProblem p = square(1);
    p.m = log_uniform(rng, 64, 16384), p.n = log_uniform(rng, 64, 16384), p.k = log_uniform(rng, 16, 4096);
    const GemmConfig c = hopper_128x256();
    const double none = predict_gemm(hw, p, c, params).time_us;
    p.epilogue = GemmEpilogue::bias;
    const double bias = predict_gemm(hw, p, c, params).time_us;
    p.epilogue = GemmEpilogue::bias_relu;
    const double relu = predict_gemm(hw, p, c, params).time_us;
    p.accumulate = true;
    const double accumulate = predict_gemm(hw, p, c, params).time_us;
    EXPECT_LE(none, bias);
    EXPECT_LE(bias, relu);
    EXPECT_LT(relu, accumulate);
  }
}

TEST(GemmModel, SplitKWinsForSmallOutputsWithLongK) {
  const Hardware hw = shipped_hardware("h200_sxm");
  const GemmModelParams params = shipped_params(hw);
  GemmProblem p = square(256);
  p.k = 65536;
  double best_split = 1e30, best_plain = 1e30;
  for (const GemmConfig& c : gemm_candidates(hw, MatrixPrecision::bf16)) {
    const double t = predict_gemm(hw, p, c, params).time_us;
    if (c.decomposition == GemmDecomposition::split_k) best_split = std::min(best_split, t);
    if (c.decomposition == GemmDecomposition::data_parallel) best_plain = std::min(best_plain, t);
  }
  EXPECT_LT(best_split, 0.5 * best_plain);
}

TEST(GemmModel, XcdRemapCutsLlcTrafficOnCdna) {
  const Hardware hw = shipped_hardware("mi300x");
  const GemmModelParams params = shipped_params(hw);
  GemmConfig c = cdna3_256x256();
  c.swizzle = 8;
  const GemmEstimate round_robin = predict_gemm(hw, square(8192), c, params);
  c.xcd_remap = true;
  const GemmEstimate remapped = predict_gemm(hw, square(8192), c, params);
  EXPECT_LT(remapped.llc_bytes, 0.6 * round_robin.llc_bytes);
  EXPECT_GT(round_robin.llc_bytes, round_robin.dram_bytes);
  // NVIDIA GPUs have one L2 and no memory-side cache level in the model.
  const Hardware h200 = shipped_hardware("h200_sxm");
  EXPECT_EQ(predict_gemm(h200, square(8192), hopper_128x256(), shipped_params(h200)).llc_bytes, 0.0);
}

TEST(GemmModel, KMajorOnlyInstructionsPayForTransposes) {
  const Hardware hw = shipped_hardware("h200_sxm");
  const GemmModelParams params = shipped_params(hw);
  GemmProblem p = square(4096, DType::f8e4m3);
  p.c_type = DType::bf16;
  GemmConfig c;
  c.tile_m = 128, c.tile_n = 256, c.tile_k = 128;
  c.inst_m = 64, c.inst_n = 256, c.inst_k = 32;
  c.warps_m = 8, c.warps_n = 1, c.stages = 3;
  EXPECT_GT(predict_gemm(hw, p, c, params).transpose_us, 0.0);  // B stored N-contiguous
  p.trans_b = true;
  EXPECT_EQ(predict_gemm(hw, p, c, params).transpose_us, 0.0);
  p.trans_a = true;
  EXPECT_GT(predict_gemm(hw, p, c, params).transpose_us, 0.0);
  // 16-bit wgmma reads either layout.
  GemmProblem q = square(4096);
  EXPECT_EQ(predict_gemm(hw, q, hopper_128x256(), params).transpose_us, 0.0);
}

TEST(GemmModel, RejectsBadProblemsAndConfigsWithReasons) {
  const Hardware hw = shipped_hardware("h200_sxm");
  auto message = [&](const GemmProblem& p, const GemmConfig& c) {
    try {
      predict_gemm(hw, p, c);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  GemmProblem p = square(1024);
  p.m = 0;
  EXPECT_NE(message(p, hopper_128x256()).find("field 'm': must be positive"), std::string::npos);
  p = square(1024);
  p.b_type = DType::f16;
  EXPECT_NE(message(p, hopper_128x256()).find("field 'b_type'"), std::string::npos);
  p = square(1024);
  p.compute_type = DType::f16;
  EXPECT_NE(message(p, hopper_128x256()).find("field 'compute_type'"), std::string::npos);
  p = square(1024);
  p.fp8_scaling = Fp8Scaling::per_tensor;
  EXPECT_NE(message(p, hopper_128x256()).find("field 'fp8_scaling'"), std::string::npos);

  GemmConfig c = hopper_128x256();
  c.tile_m = 256, c.stages = 2;  // 256x256 fp32 accumulators: the whole register file
  EXPECT_NE(message(square(1024), c).find("accumulators of a 256x256 tile do not fit"), std::string::npos);
  c = hopper_128x256();
  c.stages = 7;
  EXPECT_NE(message(square(1024), c).find("7 stages need 336 KB of shared memory"), std::string::npos);
  c = hopper_128x256();
  c.inst_n = 260;
  EXPECT_NE(message(square(1024), c).find("no bf16 instruction 64x260x16"), std::string::npos);
  c = hopper_128x256();
  c.cluster_m = 4, c.cluster_n = 4;
  EXPECT_NE(message(square(1024), c).find("exceeds the 8 CTAs"), std::string::npos);
  c = hopper_128x256();
  c.split_k = 4;  // without the split_k decomposition
  EXPECT_NE(message(square(1024), c).find("split_k must be > 1 exactly when"), std::string::npos);
  const Hardware mi300x = shipped_hardware("mi300x");
  GemmConfig a = cdna3_256x256();
  a.stages = 3;
  try {
    predict_gemm(mi300x, square(1024), a);
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("a block may use 64 KB"), std::string::npos) << e.what();
  }
}

TEST(GemmModel, SingleStageKernelsKeepOneLoadInFlight) {
  const Hardware hw = shipped_hardware("h200_sxm");
  const GemmModelParams params = shipped_params(hw);
  const GemmKernelTraits one = gemm_kernel_traits(hw, params, MatrixPrecision::bf16, mma_sync_64x64(1));
  const GemmKernelTraits two = gemm_kernel_traits(hw, params, MatrixPrecision::bf16, mma_sync_64x64(2));
  const GemmKernelTraits three = gemm_kernel_traits(hw, params, MatrixPrecision::bf16, mma_sync_64x64(3));
  ASSERT_TRUE(one.feasible && two.feasible && three.feasible) << one.infeasible_reason;
  EXPECT_DOUBLE_EQ(one.smem_bytes_per_cta * 2.0, two.smem_bytes_per_cta);
  // One stage in shared memory, the next prefetched to registers: one load in flight, as with
  // two stages; latency per iteration loaded_latency / (loads in flight x CTAs).
  EXPECT_NEAR(one.iter_latency_us * one.ctas_per_unit, two.iter_latency_us * two.ctas_per_unit, 1e-12);
  EXPECT_NEAR(three.iter_latency_us * three.ctas_per_unit * 2.0, two.iter_latency_us * two.ctas_per_unit, 1e-12);
  EXPECT_NEAR(one.iter_latency_us * one.ctas_per_unit, params.loaded_latency_ns * 1e-3, 1e-12);
  GemmConfig zero = mma_sync_64x64(1);
  zero.stages = 0;
  EXPECT_FALSE(gemm_kernel_traits(hw, params, MatrixPrecision::bf16, zero).feasible);
}

TEST(GemmModel, PreviousGenerationInstructionRunsAtItsShare) {
  const Hardware hw = shipped_hardware("h200_sxm");
  GemmModelParams params = shipped_params(hw);
  params.legacy_instruction_efficiency = 0.5;
  const double rate_per_unit =
      hw.dense_tflops.bf16 * 1e12 / hw.compute_units * params.matrix_efficiency.bf16;  // FLOP/s
  const GemmKernelTraits mma = gemm_kernel_traits(hw, params, MatrixPrecision::bf16, mma_sync_64x64(4, -1));
  ASSERT_TRUE(mma.feasible) << mma.infeasible_reason;
  EXPECT_NEAR(mma.iter_math_us, 2.0 * 64 * 64 * 32 / (rate_per_unit * 0.5) * 1e6, 1e-12);
  const GemmKernelTraits wgmma = gemm_kernel_traits(hw, params, MatrixPrecision::bf16, hopper_128x256());
  EXPECT_NEAR(wgmma.iter_math_us, 2.0 * 128 * 256 * 64 / rate_per_unit * 1e6, 1e-12);
  // On CDNA the warp-level MFMA is the newest scope: no share applies.
  const Hardware mi = shipped_hardware("mi300x");
  GemmModelParams mi_params = shipped_params(mi);
  const double full = gemm_kernel_traits(mi, mi_params, MatrixPrecision::bf16, cdna3_256x256()).iter_math_us;
  mi_params.legacy_instruction_efficiency = 0.5;
  EXPECT_EQ(gemm_kernel_traits(mi, mi_params, MatrixPrecision::bf16, cdna3_256x256()).iter_math_us, full);
}

TEST(GemmModel, FewWarpsOnASmallGridIssueAtTheirShare) {
  const Hardware hw = shipped_hardware("h200_sxm");
  const GemmModelParams params = shipped_params(hw);
  GemmConfig one_warp = mma_sync_64x64(4, -1);
  one_warp.tile_m = one_warp.tile_n = 16, one_warp.warps_m = one_warp.warps_n = 1;
  const GemmKernelTraits t = gemm_kernel_traits(hw, params, MatrixPrecision::bf16, one_warp);
  ASSERT_TRUE(t.feasible) << t.infeasible_reason;
  // One 16 x 16 tile: one CTA of one warp on its unit, a quarter of the issue slots.
  GemmProblem tiny = square(16);
  tiny.k = 4096;
  const GemmSchedule alone = schedule_gemm(hw, params, tiny, one_warp, t);
  EXPECT_EQ(alone.resident_ctas, 1.0);
  EXPECT_DOUBLE_EQ(alone.issue_share, 1.0 / kIssueSlotsPerUnit);
  EXPECT_NEAR(alone.iter_math_us, t.iter_math_us * kIssueSlotsPerUnit, 1e-12);
  EXPECT_NEAR(alone.iter_latency_us, t.iter_latency_us * t.ctas_per_unit, 1e-12);
  // Enough tiles to fill every slot: the full rate.
  const GemmSchedule full = schedule_gemm(hw, params, square(16 * 256), one_warp, t);
  EXPECT_EQ(full.resident_ctas, double(t.ctas_per_unit));
  EXPECT_EQ(full.issue_share, 1.0);
  EXPECT_EQ(full.iter_us, t.iter_us);
  // Warpgroup kernels issue for the whole unit from one warpgroup.
  const GemmKernelTraits wg = gemm_kernel_traits(hw, params, MatrixPrecision::bf16, hopper_128x256());
  EXPECT_EQ(schedule_gemm(hw, params, tiny, hopper_128x256(), wg).issue_share, 1.0);
}

TEST(GemmModel, SplitKReductionSchemes) {
  const Hardware hw = shipped_hardware("h200_sxm");
  const GemmModelParams params = shipped_params(hw);
  GemmProblem p = square(512);
  p.k = 8192;
  GemmConfig c = hopper_128x256();
  c.decomposition = GemmDecomposition::split_k, c.split_k = 4;
  const GemmEstimate fp32 = predict_gemm(hw, p, c, params);
  c.reduction = GemmReduction::workspace_output;
  const GemmEstimate output = predict_gemm(hw, p, c, params);
  c.reduction = GemmReduction::in_place;
  const GemmEstimate in_place = predict_gemm(hw, p, c, params);
  // Workspace partials in fp32 or in the (bf16) output: the reduction kernel reads s of them
  // and writes D, plus its launch.
  const double mn = 512.0 * 512.0, hbm = gemm_hbm_bytes_per_us(hw, params);
  EXPECT_NEAR(fp32.reduction_us, mn * (4 * 4.0 + 2.0) / hbm + params.launch_overhead_us, 1e-9);
  EXPECT_NEAR(output.reduction_us, mn * (4 * 2.0 + 2.0) / hbm + params.launch_overhead_us, 1e-9);
  // In place: no second kernel, but the slices of a tile take their turns in D.
  EXPECT_EQ(in_place.reduction_us, 0.0);
  EXPECT_GT(in_place.tile_overhead_us, fp32.tile_overhead_us);
  EXPECT_LT(in_place.dram_bytes, fp32.dram_bytes);
  // Every slice is launched, even with fewer K iterations than slices.
  p.k = 64;  // one iteration of 64
  c.reduction = GemmReduction::workspace_fp32;
  const GemmEstimate empty_slices = predict_gemm(hw, p, c, params);
  EXPECT_EQ(empty_slices.work_units, empty_slices.tiles * 4);
  EXPECT_NEAR(empty_slices.reduction_us, mn * (4 * 4.0 + 2.0) / hbm + params.launch_overhead_us, 1e-9);
  // The text form carries the scheme.
  for (GemmReduction r : {GemmReduction::workspace_fp32, GemmReduction::workspace_output, GemmReduction::in_place}) {
    c.reduction = r;
    EXPECT_EQ(parse_gemm_config(to_string(c), "test"), c);
  }
  EXPECT_THROW(parse_gemm_config(to_string(c) + " reduction=atomic", "test"), ConfigError);  // given twice
}

TEST(GemmModel, AsyncKernelStartUpAddsToWarpgroupKernelsOnly) {
  const Hardware hw = shipped_hardware("h200_sxm");
  GemmModelParams params = shipped_params(hw);
  params.async_kernel_setup_us = 0.0;
  const GemmProblem p = square(2048);
  const double wg = predict_gemm(hw, p, hopper_128x256(), params).time_us;
  const double mma = predict_gemm(hw, p, mma_sync_64x64(4, -1), params).time_us;
  params.async_kernel_setup_us = 3.0;
  const GemmEstimate wg_setup = predict_gemm(hw, p, hopper_128x256(), params);
  EXPECT_NEAR(wg_setup.time_us, wg + 3.0, 1e-9);
  EXPECT_EQ(wg_setup.setup_us, 3.0);
  EXPECT_EQ(predict_gemm(hw, p, mma_sync_64x64(4, -1), params).time_us, mma);
}

// The L2 term runs at the load path's rate: TMA-fed kernels and SIMT kernels each at their
// factor of the base rate, the cp.async (mma.sync) kernels at the base rate.
TEST(GemmModel, L2RateFollowsTheLoadPath) {
  const Hardware hw = shipped_hardware("h200_sxm");
  GemmModelParams params = shipped_params(hw);
  params.tma_l2_rate_factor = params.simt_l2_rate_factor = 1.0;
  GemmConfig simt;
  simt.tile_m = 128, simt.tile_n = 128, simt.tile_k = 8;
  simt.inst_m = simt.inst_n = simt.inst_k = 1;
  simt.warps_m = 4, simt.warps_n = 2, simt.stages = 3;
  const auto l2 = [&](MatrixPrecision p, const GemmConfig& c) {
    const GemmKernelTraits t = gemm_kernel_traits(hw, params, p, c);
    EXPECT_TRUE(t.feasible) << t.infeasible_reason;
    return t.iter_l2_us;
  };
  const double wg = l2(MatrixPrecision::bf16, hopper_128x256());
  const double mma = l2(MatrixPrecision::bf16, mma_sync_64x64(4, -1));
  const double fma = l2(MatrixPrecision::fp32, simt);
  EXPECT_GT(wg, 0.0);
  params.tma_l2_rate_factor = 2.0;
  params.simt_l2_rate_factor = 0.25;
  EXPECT_NEAR(l2(MatrixPrecision::bf16, hopper_128x256()), wg / 2.0, 1e-12);
  EXPECT_NEAR(l2(MatrixPrecision::fp32, simt), fma * 4.0, 1e-12);
  EXPECT_EQ(l2(MatrixPrecision::bf16, mma_sync_64x64(4, -1)), mma);
  // On CDNA (MFMA, warp scope, no TMA) neither factor applies.
  const Hardware mi = shipped_hardware("mi300x");
  GemmModelParams mi_params = shipped_params(mi);
  const double mfma = gemm_kernel_traits(mi, mi_params, MatrixPrecision::bf16, cdna3_256x256()).iter_l2_us;
  mi_params.tma_l2_rate_factor = mi_params.simt_l2_rate_factor = 3.0;
  EXPECT_EQ(gemm_kernel_traits(mi, mi_params, MatrixPrecision::bf16, cdna3_256x256()).iter_l2_us, mfma);
}

TEST(GemmModel, LibrarySimtKernelsComputeInFp32OnAnyOperands) {
  const Hardware hw = shipped_hardware("h200_sxm");
  const GemmModelParams params = shipped_params(hw);
  GemmConfig c;
  c.tile_m = 128, c.tile_n = 64, c.tile_k = 8;
  c.inst_m = c.inst_n = c.inst_k = 1;
  c.warps_m = 4, c.warps_n = 2, c.stages = 4;
  // The model's own SIMT kernels are fp32 ones.
  EXPECT_FALSE(gemm_kernel_traits(hw, params, MatrixPrecision::bf16, c).feasible);
  c.family = 16;
  const GemmKernelTraits t = gemm_kernel_traits(hw, params, MatrixPrecision::bf16, c);
  ASSERT_TRUE(t.feasible) << t.infeasible_reason;
  EXPECT_EQ(t.pipe, MatrixPrecision::fp32);
  EXPECT_EQ(t.a_bytes, 2.0);
  const double fp32_rate = hw.dense_tflops.fp32 * 1e12 / hw.compute_units * params.matrix_efficiency.fp32;
  EXPECT_NEAR(t.iter_math_us, 2.0 * 128 * 64 * 8 / fp32_rate * 1e6 / simt_issue_share(c, hw.warp_size), 1e-12);
}
