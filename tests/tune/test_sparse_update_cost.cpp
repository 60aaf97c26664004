// The embedding backward's fused sparse update as a tuning problem: space, floor, the
// static rules (shape, coalescing, idle lanes, launch bound), the prediction and the
// long-row chunking it counts, worked by hand for the H200 description.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "hw/hardware.h"
#include "kernels/long_rows.h"
#include "tune/occupancy.h"
#include "tunable/sparse_update/sparse_update_cost.h"

namespace hetrec::tune {
namespace {

using kernels::SparseOptimizerKind;

Hardware h200() { return load_hardware_by_name("h200_sxm", std::string(HETREC_SOURCE_DIR) + "/hw"); }

SparseUpdateWorkload workload(DType rows, int dim, SparseOptimizerKind opt = SparseOptimizerKind::rowwise_adagrad) {
  SparseUpdateWorkload w;
  w.shape = {rows, dim, opt};
  w.batch = 65536;
  w.num_tables = 26;
  w.total_ids = 1000000;
  w.unique_rows = 400000;
  w.short_occurrences = 900000;
  w.long_row_chunks = 3000;
  return w;
}

ParameterSet params(int vec, int lanes, int grads, int block, int min_blocks) {
  return {{"vec_bytes", vec},
          {"lanes", lanes},
          {"grads_in_flight", grads},
          {"block_threads", block},
          {"min_blocks_per_sm", min_blocks}};
}

TEST(SparseUpdateCost, SpaceAndConversions) {
  EXPECT_EQ(enumerate(sparse_update_space()).size(), 3u * 4 * 4 * 3 * 4);
  // The built-in variant: 16-byte vectors, the fewest lanes that cover the row, four
  // gradients in flight, 256 threads, four resident blocks per SM.
  const kernels::SparseUpdateShape bf16{DType::bf16, 128, SparseOptimizerKind::rowwise_adagrad};
  EXPECT_EQ(sparse_update_parameters(kernels::kDefaultSparseUpdateVariant, bf16, 32), params(16, 16, 4, 256, 4));
  const kernels::SparseUpdateShape f32{DType::f32, 128, SparseOptimizerKind::sgd};
  EXPECT_EQ(sparse_update_parameters(kernels::kDefaultSparseUpdateVariant, f32, 32), params(16, 32, 4, 256, 4));
  EXPECT_EQ(to_sparse_update_variant(params(8, 16, 2, 128, 8)), (kernels::SparseUpdateVariant{8, 16, 2, 128, 8}));
  EXPECT_THROW(to_sparse_update_variant({{"vec_bytes", 8}}), ConfigError);
  ParameterSet extra = params(8, 16, 2, 128, 8);
  extra["unroll"] = 2;
  EXPECT_THROW(to_sparse_update_variant(extra), ConfigError);
  EXPECT_EQ(bf16.key(), "rows=bf16 dim=128 opt=rowwise_adagrad");
}

TEST(SparseUpdateCost, LayoutCoversTheRow) {
  const kernels::SparseUpdateShape s{DType::bf16, 128, SparseOptimizerKind::rowwise_adagrad};
  // 4-byte vectors of bf16: 2 elements, 64 vectors; 8 lanes take 8 each.
  const kernels::SparseUpdateLayout l = kernels::sparse_update_layout(s, {4, 8, 4, 256, 4}, 32);
  EXPECT_EQ(l.vec, 2);
  EXPECT_EQ(l.lanes, 8);
  EXPECT_EQ(l.units, 8);
  EXPECT_EQ(l.vec * l.lanes * l.units, 128);
  // 4 lanes would need 16 vectors each: over the per-lane limit.
  EXPECT_NE(kernels::sparse_update_variant_problem(s, {4, 4, 4, 256, 4}, 32), "");
  // A row width that is no multiple of the vector.
  EXPECT_NE(kernels::sparse_update_variant_problem({DType::f32, 34, SparseOptimizerKind::sgd}, {16, 0, 4, 256, 4}, 32),
            "");
  EXPECT_EQ(kernels::sparse_update_variant_problem({DType::f32, 34, SparseOptimizerKind::sgd}, {4, 0, 4, 256, 4}, 32),
            "");
  EXPECT_NE(kernels::sparse_update_variant_problem(s, {16, 0, 4, 256, 0}, 32), "");
  EXPECT_NE(kernels::sparse_update_variant_problem(s, {16, 0, 4, 256, 33}, 32), "");
  EXPECT_THROW(kernels::sparse_update_layout(s, {16, 0, 0, 256, 4}, 32), ConfigError);
}

TEST(SparseUpdateCost, FloorCountsRowsStateAndGradients) {
  const Hardware hw = h200();
  const SparseUpdateWorkload w = workload(DType::bf16, 128);
  // Rows (256 bytes) and the row-wise accumulator (4 bytes) read and written, 12 plan
  // bytes per row; per short occurrence its 512-byte gradient and 4-byte bag; per chunk
  // sum 512 bytes.
  const double bytes = 400000.0 * (2 * 256 + 2 * 4 + 12) + 900000.0 * (512 + 4) + 3000.0 * 512;
  EXPECT_DOUBLE_EQ(sparse_update_bytes(w), bytes);
  EXPECT_NEAR(sparse_update_floor_us(hw, w), bytes / (hw.hbm_tbs * 1e12) * 1e6, 1e-9);
  EXPECT_DOUBLE_EQ(sparse_update_state_bytes(workload(DType::f32, 64, SparseOptimizerKind::sgd).shape), 0.0);
  EXPECT_DOUBLE_EQ(sparse_update_state_bytes(workload(DType::f32, 64, SparseOptimizerKind::adagrad).shape), 256.0);
  // Element-wise Adagrad moves its dim floats of state both ways.
  EXPECT_GT(sparse_update_bytes(workload(DType::bf16, 128, SparseOptimizerKind::adagrad)), bytes);
  Hardware none = hw;
  none.hbm_tbs = 0;
  EXPECT_THROW(sparse_update_floor_us(none, w), ConfigError);
}

TEST(SparseUpdateCost, StaticRules) {
  const Hardware hw = h200();
  const SparseUpdateWorkload w = workload(DType::bf16, 128);
  EXPECT_EQ(sparse_update_static_problem(hw, w, params(16, 16, 4, 256, 4)), "");  // the built-in
  // 4 lanes x 4 bytes = 16 bytes of a row per access: half a sector.
  EXPECT_EQ(sparse_update_static_problem(hw, w, params(4, 4, 4, 256, 4)).rfind("invalid", 0), 0u);  // 16 units
  EXPECT_EQ(sparse_update_static_problem(hw, workload(DType::bf16, 32), params(4, 4, 4, 256, 4)).rfind("coalescing", 0),
            0u);
  // 16-byte vectors of bf16 give 16 vectors of a 128-wide row: 32 lanes leave 16 idle.
  EXPECT_EQ(sparse_update_static_problem(hw, w, params(16, 32, 4, 256, 4)).rfind("idle lanes", 0), 0u);
  // 512 threads x 8 blocks: twice what an SM holds.
  EXPECT_EQ(sparse_update_static_problem(hw, w, params(16, 16, 4, 512, 8)).rfind("launch bound", 0), 0u);
  EXPECT_EQ(sparse_update_static_problem(hw, w, params(16, 16, 4, 512, 4)), "");
  // Every variant of the space either passes or names its rule.
  for (const ParameterSet& p : enumerate(sparse_update_space())) {
    const std::string problem = sparse_update_static_problem(hw, w, p);
    if (problem.empty()) continue;
    EXPECT_TRUE(problem.rfind("invalid", 0) == 0 || problem.rfind("coalescing", 0) == 0 ||
                problem.rfind("idle lanes", 0) == 0 || problem.rfind("launch bound", 0) == 0)
        << problem;
  }
}

TEST(SparseUpdateCost, PredictionIsTheLargerOfBandwidthAndIssue) {
  const Hardware hw = h200();
  const SparseUpdateWorkload w = workload(DType::bf16, 128);
  const ParameterSet built_in = params(16, 16, 4, 256, 4);
  // Issue: 16 lanes x 1 unit per gradient row; 8 floats per lane are two 16-byte
  // accesses; per row a load and a store.
  const double accesses = (900000.0 + 3000.0) * 16 * 1 * 2 + 400000.0 * 16 * 1 * 2;
  EXPECT_NEAR(sparse_update_issue_us(hw, w, built_in), accesses / (hw.compute_units * 32 * hw.clock_mhz), 1e-9);
  const double floor = sparse_update_floor_us(hw, w);
  EXPECT_GE(sparse_update_predicted_us(hw, w, built_in), floor - 1e-9);
  EXPECT_GE(sparse_update_predicted_us(hw, w, built_in), sparse_update_issue_us(hw, w, built_in) - 1e-9);
  // Fewer resident threads (a launch bound of one block of 128) cannot be predicted
  // faster: Little's law only lowers the bandwidth.
  EXPECT_GE(sparse_update_predicted_us(hw, w, params(16, 16, 4, 128, 1)),
            sparse_update_predicted_us(hw, w, built_in) - 1e-9);
}

TEST(SparseUpdateCost, LongRowsAreChunkedBySquareRoot) {
  EXPECT_EQ(kernels::long_row_chunks(1), 0u);
  EXPECT_EQ(kernels::long_row_chunks(kernels::kLongSegment), 0u);
  // 65 occurrences: chunks of 64 (the minimum), so two.
  EXPECT_EQ(kernels::long_row_chunks(kernels::kLongSegment + 1), 2u);
  // 650 000 occurrences: chunks of ceil(sqrt) = 807, 806 of them (806 x 807 = 650 442).
  EXPECT_EQ(kernels::long_row_chunk_length(650000), 807u);
  EXPECT_EQ(kernels::long_row_chunks(650000), 806u);
  EXPECT_EQ(kernels::long_row_chunk_length(10000), 100u);
}

TEST(SparseUpdateCost, OccupancyOfTheLaunchBoundWorkedByHand) {
  const Hardware hw = h200();
  // The built-in bound asks for 4 blocks of 256: the compiler caps registers at
  // 65536 / 1024 = 64, and 64 registers give exactly those 4 blocks (half the SM).
  ResourceReport r;
  r.registers = 64;
  r.dynamic_shared_bytes = 26 * 8;  // the MLPerf tables' rounding keys
  r.max_threads_per_block = 256;
  const Occupancy occ = occupancy(hw, r, 256);
  EXPECT_EQ(occ.blocks_per_unit, 4);
  EXPECT_DOUBLE_EQ(occ.fraction, 0.5);
}

}  // namespace
}  // namespace hetrec::tune
