// The dot interaction's backward as a tuning problem: space, floor, the shared-memory,
// bank-conflict and idle-thread rules, the shared-memory clocks of the prediction and the
// occupancy, worked by hand for the H200 description.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "hw/hardware.h"
#include "tunable/dot_interaction/dot_backward_cost.h"

namespace hetrec::tune {
namespace {

Hardware h200() { return load_hardware_by_name("h200_sxm", std::string(HETREC_SOURCE_DIR) + "/hw"); }

DotBackwardWorkload workload(int features, int dim, bool self = false) {
  DotBackwardWorkload w;
  w.shape = {features, dim, self};
  w.batch = 65536;
  return w;
}

ParameterSet params(int block, int samples, int pad, int rows) {
  return {{"block_threads", block}, {"samples_per_block", samples}, {"row_pad", pad}, {"rows_per_thread", rows}};
}

TEST(DotBackwardCost, SpaceAndConversions) {
  EXPECT_EQ(enumerate(dot_backward_space()).size(), 128u);
  EXPECT_EQ(dot_backward_parameters(kernels::kDefaultDotBackwardVariant), params(256, 1, 1, 1));
  EXPECT_EQ(to_dot_backward_variant(params(128, 4, 0, 2)), (kernels::DotBackwardVariant{128, 4, 0, 2}));
  EXPECT_THROW(to_dot_backward_variant({{"block_threads", 128}}), ConfigError);
  ParameterSet extra = params(128, 4, 0, 2);
  extra["unroll"] = 2;
  EXPECT_THROW(to_dot_backward_variant(extra), ConfigError);
}

TEST(DotBackwardCost, FloorIsBytesOrFlopsWhicheverIsLarger) {
  const Hardware hw = h200();
  const DotBackwardWorkload w = workload(27, 128);
  // Features read and dfeatures written (27 x 128 each), dout read (128 + 351).
  const double bytes = 65536.0 * (2 * 27 * 128 + 128 + 351) * 4;
  // Each of the 351 pair gradients scales two rows of 128: 2 x 351 x 128 multiply-adds.
  const double flops = 2.0 * 65536 * 2 * 351 * 128;
  EXPECT_DOUBLE_EQ(dot_backward_bytes(w), bytes);
  EXPECT_DOUBLE_EQ(dot_backward_flops(w), flops);
  const double floor = std::max(bytes / (hw.hbm_tbs * 1e12), flops / (hw.dense_tflops.fp32 * 1e12)) * 1e6;
  EXPECT_NEAR(dot_backward_floor_us(hw, w), floor, 1e-9);
  EXPECT_NEAR(floor, bytes / 4.8e12 * 1e6, 1e-9);  // bound by HBM on the H200
}

TEST(DotBackwardCost, SharedMemoryRule) {
  const Hardware hw = h200();
  // One sample: (27 x 129 + 27 x 28) floats = 16956 B; eight: 135648 B, within 227 KB.
  EXPECT_EQ(kernels::dot_backward_shared_bytes(27, 128, kernels::kDefaultDotBackwardVariant), 16956u);
  EXPECT_EQ(dot_backward_static_problem(hw, workload(27, 128), params(256, 8, 1, 1)), "");
  // Eight samples of 27 x 1025 + 27 x 28 floats: 909 KB do not fit; one does.
  EXPECT_NE(dot_backward_static_problem(hw, workload(27, 1024), params(256, 8, 1, 1)).find("invalid"),
            std::string::npos);
  EXPECT_EQ(dot_backward_static_problem(hw, workload(27, 1024), params(256, 1, 1, 1)), "");
  EXPECT_NE(dot_backward_static_problem(hw, workload(27, 128), params(256, 1, 1, 16)).find("invalid"),
            std::string::npos);
}

TEST(DotBackwardCost, BankConflictRule) {
  const Hardware hw = h200();
  // D = 128: a warp stays within one row group, every pair-gradient read is a broadcast.
  EXPECT_EQ(dot_backward_static_problem(hw, workload(32, 128), params(256, 1, 0, 1)), "");
  // D = 16: a warp covers two (three when unaligned) row groups; 32 rows of 32 floats
  // without padding start in one bank, 33 floats do not.
  EXPECT_NE(dot_backward_static_problem(hw, workload(32, 16), params(256, 1, 0, 1)).find("bank conflicts"),
            std::string::npos);
  EXPECT_EQ(dot_backward_static_problem(hw, workload(32, 16), params(256, 1, 1, 1)), "");
  // 8 features, four rows per thread: two groups 4 x 9 = 36 floats apart, no conflict.
  EXPECT_EQ(dot_backward_static_problem(hw, workload(8, 16), params(32, 1, 1, 4)), "");
  // 15 features, eight rows per thread: padded, 8 x 16 = 128 floats apart, a conflict;
  // unpadded 8 x 15 = 120, none. Padding can cause a conflict as well as remove one.
  EXPECT_NE(dot_backward_static_problem(hw, workload(15, 16), params(64, 1, 1, 8)).find("bank conflicts"),
            std::string::npos);
  EXPECT_EQ(dot_backward_static_problem(hw, workload(15, 16), params(64, 1, 0, 8)), "");
}

TEST(DotBackwardCost, IdleThreadRule) {
  const Hardware hw = h200();
  // 3 features x 16 columns: 48 items (3 pairs) for 512 threads.
  EXPECT_NE(dot_backward_static_problem(hw, workload(3, 16), params(512, 1, 1, 1)).find("idle threads"),
            std::string::npos);
  EXPECT_EQ(dot_backward_static_problem(hw, workload(3, 16), params(64, 2, 1, 1)), "");
  // Eight rows per thread of 27 x 128: 4 groups x 128 = 512 items, enough for 512 threads.
  EXPECT_EQ(dot_backward_static_problem(hw, workload(27, 128), params(512, 1, 1, 8)), "");
}

TEST(DotBackwardCost, PredictionCountsSharedClocksAndIsAtLeastTheFloor) {
  const Hardware hw = h200();
  const DotBackwardWorkload w = workload(27, 128);
  // Default: staging 3456/32 = 108 + ceil(27 x 28 / 32) = 24 + 2 x ceil(351/32) = 22 clocks;
  // 108 warps x 27 features x (1 feature + 1 gradient read) = 5832.
  EXPECT_DOUBLE_EQ(dot_backward_shared_clocks_per_sample(hw, w, params(256, 1, 1, 1)), 154.0 + 5832.0);
  // Four rows per thread: 7 groups, 28 warps x 27 x (1 + 4) = 3780.
  EXPECT_DOUBLE_EQ(dot_backward_shared_clocks_per_sample(hw, w, params(256, 1, 1, 4)), 154.0 + 3780.0);
  const double clocks_per_us = 132 * 1830.0;
  EXPECT_NEAR(dot_backward_predicted_us(hw, w, params(256, 1, 1, 1)), 65536.0 * 5986 / clocks_per_us, 1e-6);
  for (const ParameterSet& p : enumerate(dot_backward_space())) {
    if (!dot_backward_static_problem(hw, w, p).empty()) continue;
    EXPECT_GE(dot_backward_predicted_us(hw, w, p), dot_backward_floor_us(hw, w)) << describe(p);
  }
}

TEST(DotBackwardCost, OccupancyFollowsSharedMemory) {
  const Hardware hw = h200();
  const DotBackwardWorkload w = workload(27, 128);
  // 16956 B per block: 13 blocks fit 228 KB; 8 blocks of 256 threads fill the SM.
  EXPECT_DOUBLE_EQ(dot_backward_shared_occupancy(hw, w, params(256, 1, 1, 1)), 1.0);
  // 135648 B per block: one block of 256 threads.
  EXPECT_DOUBLE_EQ(dot_backward_shared_occupancy(hw, w, params(256, 8, 1, 1)), 0.125);
}

}  // namespace
}  // namespace hetrec::tune
