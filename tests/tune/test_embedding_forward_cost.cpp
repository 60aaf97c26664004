// The embedding forward as a tuning problem: floor, static pruning, prediction order, and
// occupancy from a resource report, against numbers worked out by hand.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "hw/hardware.h"
#include "tunable/embedding_forward/embedding_forward_cost.h"
#include "tune/occupancy.h"

namespace hetrec::tune {
namespace {

Hardware h200() { return load_hardware_by_name("h200_sxm", std::string(HETREC_SOURCE_DIR) + "/hw"); }

EmbeddingForwardWorkload workload(DType rows, int dim) {
  EmbeddingForwardWorkload w;
  w.shape = {rows, DType::f32, dim};
  w.batch = 1000;
  w.num_tables = 10;
  w.total_ids = 50000;
  return w;
}

ParameterSet params(int vec_bytes, int lanes, int ids, int block) {
  return {{"vec_bytes", vec_bytes}, {"lanes", lanes}, {"ids_in_flight", ids}, {"block_threads", block}};
}

TEST(EmbeddingForwardCost, FloorCountsRowsOutputIdsAndOffsets) {
  const EmbeddingForwardWorkload w = workload(DType::f32, 128);
  // 50000 ids x (512 B row + 4 B id) + 10000 bags x 512 B output + 10001 offsets x 4 B.
  const double bytes = 50000.0 * 516 + 10000.0 * 512 + 10001.0 * 4;
  EXPECT_DOUBLE_EQ(embedding_forward_bytes(w), bytes);
  const Hardware hw = h200();
  EXPECT_NEAR(embedding_forward_floor_us(hw, w), bytes / (hw.hbm_tbs * 1e12) * 1e6, 1e-9);
  // With 20000 distinct rows among the 50000 ids, only those are read from HBM.
  EmbeddingForwardWorkload u = w;
  u.unique_rows = 20000;
  EXPECT_DOUBLE_EQ(embedding_forward_bytes(u), 20000.0 * 512 + 50000.0 * 4 + 10000.0 * 512 + 10001.0 * 4);
}

TEST(EmbeddingForwardCost, IssueTimeCountsEveryLanesLoads) {
  const Hardware hw = h200();
  const EmbeddingForwardWorkload w = workload(DType::f32, 128);
  // 4-byte vectors over 32 lanes: 4 loads per lane, 128 per id.
  const double per_us = hw.compute_units * 32 * hw.clock_mhz;
  EXPECT_NEAR(embedding_forward_issue_us(hw, w, params(4, 32, 4, 256)), 50000.0 * 128 / per_us, 1e-12);
  EXPECT_LT(embedding_forward_issue_us(hw, w, params(16, 32, 4, 256)),
            embedding_forward_issue_us(hw, w, params(4, 32, 4, 256)));
}

TEST(EmbeddingForwardCost, StaticRulesPruneWithReasons) {
  const Hardware hw = h200();
  const EmbeddingForwardWorkload w = workload(DType::f32, 128);
  EXPECT_EQ(embedding_forward_static_problem(hw, w, params(16, 32, 4, 256)), "");
  const EmbeddingForwardWorkload w32 = workload(DType::f32, 32);
  EXPECT_EQ(embedding_forward_static_problem(hw, w32, params(4, 8, 4, 256)), "");  // 8 x 4 B = one sector
  // 4 lanes x 4 B = 16 B per access: below a 32-byte sector.
  EXPECT_NE(embedding_forward_static_problem(hw, w32, params(4, 4, 4, 256)).find("coalescing"), std::string::npos);
  // fp32 dim 128 with 4-byte vectors over 8 lanes: 16 vectors per lane, above 8.
  EXPECT_NE(embedding_forward_static_problem(hw, w, params(4, 8, 4, 256)).find("vectors per lane"), std::string::npos);
  // bf16 dim 32 with 16-byte vectors: 4 vectors, 8 lanes leave 4 idle.
  const EmbeddingForwardWorkload narrow = workload(DType::bf16, 32);
  EXPECT_NE(embedding_forward_static_problem(hw, narrow, params(16, 8, 4, 256)).find("idle lanes"),
            std::string::npos);
  // dim 130 is not a multiple of 4 fp32 elements.
  EXPECT_NE(embedding_forward_static_problem(hw, workload(DType::f32, 130), params(16, 32, 4, 256)).find("invalid"),
            std::string::npos);
  // dim 1024 fp32 with 4-byte vectors and 4 lanes: 256 vectors per lane, above 8.
  EXPECT_NE(embedding_forward_static_problem(hw, workload(DType::f32, 1024), params(4, 32, 4, 256)).find("invalid"),
            std::string::npos);
}

TEST(EmbeddingForwardCost, PredictionNeverBeatsTheFloorAndRewardsLoadsInFlight) {
  const Hardware hw = h200();
  EmbeddingForwardWorkload w = workload(DType::f32, 128);
  w.batch = 65536;
  w.num_tables = 26;
  w.total_ids = 65536LL * 214;
  const double floor = embedding_forward_floor_us(hw, w);
  for (const ParameterSet& p : enumerate(embedding_forward_space())) {
    if (!embedding_forward_static_problem(hw, w, p).empty()) continue;
    EXPECT_GE(embedding_forward_predicted_us(hw, w, p, 1.0), floor * (1 - 1e-12)) << describe(p);
  }
  // At low occupancy, more loads in flight per lane predict a shorter time.
  EXPECT_LT(embedding_forward_predicted_us(hw, w, params(16, 32, 8, 256), 0.05),
            embedding_forward_predicted_us(hw, w, params(16, 32, 1, 256), 0.05));
}

TEST(EmbeddingForwardCost, DefaultParametersResolveTheLaneCount) {
  const ParameterSet p = forward_parameters(kernels::kDefaultForwardVariant, {DType::f32, DType::f32, 128}, 32);
  EXPECT_EQ(p, params(16, 32, 4, 256));  // 32 vectors of 4 floats: one warp
  const ParameterSet b = forward_parameters(kernels::kDefaultForwardVariant, {DType::bf16, DType::f32, 128}, 32);
  EXPECT_EQ(b, params(16, 16, 4, 256));  // 16 vectors of 8 bf16
}

TEST(Occupancy, RegistersThreadsAndSharedMemoryLimit) {
  const Hardware hw = h200();  // 2048 threads, 64 K registers, 228 KB shared per SM
  // 32 registers x 32 lanes = 1024 per warp; 64 warps fit: thread-limited, 8 blocks of 256.
  Occupancy o = occupancy(hw, {32, 0, 0, 0, 1024}, 256);
  EXPECT_EQ(o.blocks_per_unit, 8);
  EXPECT_DOUBLE_EQ(o.fraction, 1.0);
  EXPECT_EQ(o.limiter, "threads");
  // 128 registers: 4096 per warp, 16 warps per SM, 2 blocks of 8 warps.
  o = occupancy(hw, {128, 0, 0, 0, 512}, 256);
  EXPECT_EQ(o.blocks_per_unit, 2);
  EXPECT_DOUBLE_EQ(o.fraction, 0.25);
  EXPECT_EQ(o.limiter, "registers");
  // 40 registers round to 1280 per warp: 51 warps, 6 blocks of 8 warps.
  o = occupancy(hw, {40, 0, 0, 0, 1024}, 256);
  EXPECT_EQ(o.blocks_per_unit, 6);
  // 100 KB of shared memory per block: 2 blocks.
  o = occupancy(hw, {16, 100 * 1024, 0, 0, 1024}, 64);
  EXPECT_EQ(o.blocks_per_unit, 2);
  EXPECT_EQ(o.limiter, "shared memory");
  // The same from dynamic shared memory (what a launch requests), 60 + 40 KB: 2 blocks.
  o = occupancy(hw, {16, 60 * 1024, 40 * 1024, 0, 1024}, 64);
  EXPECT_EQ(o.blocks_per_unit, 2);
  // 64-thread blocks with few registers: 32 blocks per SM at most.
  o = occupancy(hw, {16, 0, 0, 0, 1024}, 32);
  EXPECT_EQ(o.blocks_per_unit, 32);
  EXPECT_EQ(o.limiter, "blocks");
  // A block larger than the compiled kernel allows cannot run.
  EXPECT_EQ(occupancy(hw, {255, 0, 0, 0, 256}, 512).blocks_per_unit, 0);
}

TEST(Occupancy, RejectsOtherVendors) {
  Hardware amd = h200();
  amd.vendor = Vendor::amd;
  EXPECT_THROW(occupancy(amd, {32, 0, 0, 0, 1024}, 256), ConfigError);
}

}  // namespace
}  // namespace hetrec::tune
