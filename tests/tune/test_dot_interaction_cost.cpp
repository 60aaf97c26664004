// The dot interaction's forward as a tuning problem: space, floor, the shared-memory and
// bank-conflict rules, prediction, worked by hand for the H200 description.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "hw/hardware.h"
#include "tunable/dot_interaction/dot_interaction_cost.h"

namespace hetrec::tune {
namespace {

Hardware h200() { return load_hardware_by_name("h200_sxm", std::string(HETREC_SOURCE_DIR) + "/hw"); }

DotForwardWorkload workload(int features, int dim, bool self = false) {
  DotForwardWorkload w;
  w.shape = {features, dim, self};
  w.batch = 65536;
  return w;
}

ParameterSet params(int block, int samples, int pad) {
  return {{"block_threads", block}, {"samples_per_block", samples}, {"row_pad", pad}};
}

TEST(DotForwardCost, SpaceAndConversions) {
  const auto all = enumerate(dot_forward_space());
  EXPECT_EQ(all.size(), 32u);
  EXPECT_EQ(dot_parameters(kernels::kDefaultDotForwardVariant), params(256, 1, 1));
  EXPECT_EQ(to_dot_variant(params(128, 4, 0)), (kernels::DotForwardVariant{128, 4, 0}));
  EXPECT_THROW(to_dot_variant({{"block_threads", 128}}), ConfigError);
}

TEST(DotForwardCost, FloorIsBytesOrFlopsWhicheverIsLarger) {
  const Hardware hw = h200();
  const DotForwardWorkload w = workload(27, 128);
  EXPECT_EQ(w.pairs(), 351);
  EXPECT_EQ(workload(27, 128, true).pairs(), 378);
  const double bytes = 65536.0 * (27 * 128 + 128 + 351) * 4;
  const double flops = 2.0 * 65536 * 351 * 128;
  EXPECT_DOUBLE_EQ(dot_forward_bytes(w), bytes);
  EXPECT_DOUBLE_EQ(dot_forward_flops(w), flops);
  EXPECT_NEAR(dot_forward_floor_us(hw, w), std::max(bytes / (hw.hbm_tbs * 1e12), flops / (hw.dense_tflops.fp32 * 1e12)) * 1e6,
              1e-9);
}

TEST(DotForwardCost, StaticRules) {
  const Hardware hw = h200();
  const DotForwardWorkload w = workload(27, 128);
  EXPECT_EQ(dot_forward_static_problem(hw, w, params(256, 1, 1)), "");
  // 128-float rows without padding start in one bank.
  EXPECT_NE(dot_forward_static_problem(hw, w, params(256, 1, 0)).find("bank conflicts"), std::string::npos);
  // 127-float rows do not.
  EXPECT_EQ(dot_forward_static_problem(hw, workload(27, 127), params(256, 1, 0)), "");
  // 8 samples x 27 x 129 floats = 109 KB fit in 227 KB; 8 x 27 x 513 floats = 433 KB do not.
  EXPECT_EQ(dot_forward_static_problem(hw, w, params(256, 8, 1)), "");
  EXPECT_NE(dot_forward_static_problem(hw, workload(27, 512), params(256, 8, 1)).find("invalid"), std::string::npos);
  // 512 threads for 3 features: 3 pairs, 16 outputs.
  EXPECT_NE(dot_forward_static_problem(hw, workload(3, 16), params(512, 1, 1)).find("idle threads"), std::string::npos);
}

TEST(DotForwardCost, PredictionIsAtLeastTheFloorAndOccupancyFollowsSharedMemory) {
  const Hardware hw = h200();
  const DotForwardWorkload w = workload(27, 128);
  for (const ParameterSet& p : enumerate(dot_forward_space())) {
    if (!dot_forward_static_problem(hw, w, p).empty()) continue;
    EXPECT_GE(dot_forward_predicted_us(hw, w, p), dot_forward_floor_us(hw, w)) << describe(p);
  }
  // One sample: 27 x 129 x 4 = 13932 B per block; 228 KB hold 16 blocks; 8 blocks of 256 threads fill the SM.
  EXPECT_DOUBLE_EQ(dot_forward_shared_occupancy(hw, w, params(256, 1, 1)), 1.0);
  // Eight samples: 111456 B per block, 2 blocks of 256 threads: a quarter.
  EXPECT_DOUBLE_EQ(dot_forward_shared_occupancy(hw, w, params(256, 8, 1)), 0.25);
}

}  // namespace
}  // namespace hetrec::tune
