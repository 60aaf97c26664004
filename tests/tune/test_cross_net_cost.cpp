// The cross net's element-wise passes as tuning problems: spaces, byte counts and floors,
// the static rules (vector width, idle threads, chunk rows and workspace, staged shared
// memory), the prediction, worked by hand for the H200 description and the MLPerf
// DLRM-DCNv2 width (27 features x 128 = 3456).
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "hw/hardware.h"
#include "tunable/cross_net/cross_net_variant.h"
#include "tunable/cross_net/cross_net_cost.h"

namespace hetrec::tune {
namespace {

Hardware h200() { return load_hardware_by_name("h200_sxm", std::string(HETREC_SOURCE_DIR) + "/hw"); }

constexpr int kMlperfWidth = 27 * 128;
constexpr int64_t kMlperfBatch = 131072;

CrossWorkload workload(DType op, int width = kMlperfWidth, int64_t batch = kMlperfBatch) {
  return {{op, width}, batch};
}

ParameterSet fwd(int vec, int items, int block) { return {{"vec", vec}, {"items", items}, {"block_threads", block}}; }
ParameterSet bwd(int vec, int cols, int groups, int chunk) {
  return {{"vec", vec}, {"col_threads", cols}, {"row_groups", groups}, {"chunk_rows", chunk}};
}

bool has(const std::string& problem, const char* rule) { return problem.rfind(rule, 0) == 0; }

TEST(CrossNetCost, SpacesAndConversions) {
  EXPECT_EQ(enumerate(cross_forward_space()).size(), 48u);
  EXPECT_EQ(enumerate(cross_backward_space()).size(), 144u);
  EXPECT_EQ(cross_forward_parameters(kernels::kDefaultCrossForwardVariant), fwd(1, 1, 256));
  EXPECT_EQ(cross_backward_parameters(kernels::kDefaultCrossBackwardVariant), bwd(1, 256, 1, 256));
  EXPECT_EQ(to_cross_forward_variant(fwd(4, 2, 512)), (kernels::CrossForwardVariant{4, 2, 512}));
  EXPECT_EQ(to_cross_backward_variant(bwd(2, 64, 4, 512)), (kernels::CrossBackwardVariant{2, 64, 4, 512}));
  EXPECT_THROW(to_cross_forward_variant({{"vec", 4}}), ConfigError);
  EXPECT_THROW(to_cross_backward_variant({{"vec", 4}, {"col_threads", 64}, {"row_groups", 1}}), ConfigError);
  ParameterSet extra = fwd(1, 1, 256);
  extra["lanes"] = 4;
  EXPECT_THROW(to_cross_forward_variant(extra), ConfigError);
  // The built-in variants are in their spaces and pass their rules at the MLPerf shape.
  const Hardware hw = h200();
  for (DType op : {DType::f32, DType::bf16}) {
    EXPECT_EQ(cross_forward_static_problem(hw, workload(op), fwd(1, 1, 256)), "");
    EXPECT_EQ(cross_backward_static_problem(hw, workload(op), bwd(1, 256, 1, 256)), "");
  }
  EXPECT_EQ(kernels::CrossNetShape({DType::bf16, 3456}).key(), "op=bf16 width=3456");
}

TEST(CrossNetCost, BytesPerElementAndFloors) {
  const Hardware hw = h200();
  const double n = static_cast<double>(kMlperfBatch) * kMlperfWidth;
  // Forward: x0, x, z read; out written, and the operand copy in 16-bit mode.
  EXPECT_DOUBLE_EQ(cross_forward_bytes(workload(DType::f32)), n * (4 + 4 + 4 + 4));
  EXPECT_DOUBLE_EQ(cross_forward_bytes(workload(DType::bf16)), n * (4 + 4 + 2 + 4 + 2));
  // Backward (the bottom pass of three layers): g, two terms h, x0, three z's read; dz and
  // dx0 written; the bias once.
  EXPECT_DOUBLE_EQ(cross_backward_bytes(workload(DType::f32)), n * 36 + kMlperfWidth * 4.0);
  EXPECT_DOUBLE_EQ(cross_backward_bytes(workload(DType::bf16)), n * 24 + kMlperfWidth * 4.0);
  // 7.25 GB at 4.8 TB/s: 1510 us; 11.8 GB: 2454 us.
  EXPECT_NEAR(cross_forward_floor_us(hw, workload(DType::bf16)), n * 16 / 4.8e12 * 1e6, 1e-6);
  EXPECT_NEAR(cross_backward_floor_us(hw, workload(DType::bf16)), (n * 24 + kMlperfWidth * 4.0) / 4.8e12 * 1e6, 1e-6);
  Hardware no_bandwidth = hw;
  no_bandwidth.hbm_tbs = 0;
  EXPECT_THROW(cross_forward_floor_us(no_bandwidth, workload(DType::f32)), ConfigError);
}

TEST(CrossNetCost, ForwardRules) {
  const Hardware hw = h200();
  const CrossWorkload w = workload(DType::bf16);
  EXPECT_EQ(cross_forward_static_problem(hw, w, fwd(8, 4, 1024)), "");
  // 3456 = 2^7 x 27: every vector width of the space divides it; a width of 3460 does not take 8.
  EXPECT_TRUE(has(cross_forward_static_problem(hw, workload(DType::bf16, 3460), fwd(8, 1, 256)), "vector width"));
  EXPECT_EQ(cross_forward_static_problem(hw, workload(DType::bf16, 3460), fwd(4, 1, 256)), "");
  // 4 rows x 64 = 256 elements, 32 vectors of 8: a block of 128 threads has idle threads.
  EXPECT_TRUE(has(cross_forward_static_problem(hw, workload(DType::f32, 64, 4), fwd(8, 1, 128)), "idle threads"));
  EXPECT_EQ(cross_forward_static_problem(hw, workload(DType::f32, 64, 4), fwd(1, 1, 128)), "");
  EXPECT_TRUE(has(cross_forward_static_problem(hw, w, fwd(3, 1, 256)), "invalid"));
  EXPECT_TRUE(has(cross_forward_static_problem(hw, workload(DType::f64), fwd(1, 1, 256)), "invalid"));
}

TEST(CrossNetCost, BackwardRules) {
  const Hardware hw = h200();
  const CrossWorkload w = workload(DType::bf16);
  EXPECT_EQ(cross_backward_static_problem(hw, w, bwd(4, 128, 2, 512)), "");
  // 256 x 8 threads exceed a block.
  EXPECT_TRUE(has(cross_backward_static_problem(hw, w, bwd(1, 256, 8, 1024)), "invalid"));
  // Chunks shorter than the engine's 256 rows need more workspace than it reserves.
  EXPECT_TRUE(has(cross_backward_static_problem(hw, w, bwd(1, 256, 1, 128)), "invalid"));
  // 4 columns per thread do not divide a row of 3458.
  EXPECT_TRUE(has(cross_backward_static_problem(hw, workload(DType::bf16, 3458), bwd(4, 64, 1, 256)), "vector width"));
  // A block spanning 256 x 4 = 1024 columns of a 512-wide row has idle threads.
  EXPECT_TRUE(has(cross_backward_static_problem(hw, workload(DType::f32, 512), bwd(4, 256, 1, 256)), "idle threads"));
  EXPECT_EQ(cross_backward_static_problem(hw, workload(DType::f32, 512), bwd(2, 256, 1, 256)), "");
  // Staged partials: 7 groups x 128 columns x 4 floats = 14 KB (under 48 KB).
  EXPECT_EQ(kernels::cross_backward_shared_bytes({4, 128, 8, 1024}), 7u * 128 * 4 * 4);
  EXPECT_EQ(cross_backward_static_problem(hw, w, bwd(4, 128, 8, 1024)), "");
  // Partials and the longest addition chain.
  EXPECT_EQ(kernels::cross_backward_partial_floats(kMlperfBatch, kMlperfWidth, {1, 256, 1, 256}), 512u * 3456);
  EXPECT_EQ(kernels::cross_backward_partial_floats(kMlperfBatch, kMlperfWidth, {1, 256, 1, 1024}), 128u * 3456);
  EXPECT_EQ(kernels::cross_backward_partial_floats(1000, 8, {1, 32, 1, 256}), 4u * 8);
  EXPECT_EQ(kernels::cross_backward_sum_chain(kMlperfBatch), 1024 + 512);
  // A winner serves every batch of its shape: at 16384 rows (an eighth) chunks of 1024 rows
  // in blocks of 32 column threads leave 16 x 27 blocks of 32 threads, far too few loads in
  // flight; the same chunks in blocks of 64 x 8 threads keep HBM busy.
  EXPECT_TRUE(has(cross_backward_static_problem(hw, w, bwd(4, 32, 1, 1024)), "small batches"));
  EXPECT_EQ(cross_backward_static_problem(hw, w, bwd(4, 64, 8, 1024)), "");
  for (const ParameterSet& p : enumerate(cross_backward_space())) {
    const std::string problem = cross_backward_static_problem(hw, w, p);
    if (problem.empty() || !has(problem, "small batches")) continue;
    const CrossWorkload small{w.shape, kMlperfBatch / 8};
    EXPECT_GT(cross_backward_rank(hw, small, p).first, 2 * cross_backward_rank(hw, small, bwd(1, 256, 1, 256)).first)
        << describe(p);
  }
}

TEST(CrossNetCost, PredictionIsAtLeastTheFloorAndFavoursBytesInFlight) {
  const Hardware hw = h200();
  for (DType op : {DType::f32, DType::bf16}) {
    const CrossWorkload w = workload(op);
    for (const ParameterSet& p : enumerate(cross_forward_space())) {
      if (!cross_forward_static_problem(hw, w, p).empty()) continue;
      const auto [predicted, issue] = cross_forward_rank(hw, w, p);
      EXPECT_GE(predicted, cross_forward_floor_us(hw, w) * (1 - 1e-12)) << describe(p);
      EXPECT_GE(predicted, issue) << describe(p);
    }
    for (const ParameterSet& p : enumerate(cross_backward_space())) {
      if (!cross_backward_static_problem(hw, w, p).empty()) continue;
      EXPECT_GE(cross_backward_rank(hw, w, p).first, cross_backward_floor_us(hw, w) * (1 - 1e-12)) << describe(p);
    }
  }
  // Forward, bf16: one element of 10 bytes read per thread, 2048 threads x 132 SMs in
  // flight over 1 us sustain 2.70 TB/s, below HBM's 4.8: the built-in variant is
  // predicted at 7.25 GB / 2.70 TB/s; 4 elements per access saturate HBM.
  const CrossWorkload w = workload(DType::bf16);
  const double n = static_cast<double>(kMlperfBatch) * kMlperfWidth;
  EXPECT_NEAR(cross_forward_rank(hw, w, fwd(1, 1, 256)).first, n * 16 / (2048.0 * 132 * 10 * 1e6) * 1e6, 1e-6);
  EXPECT_NEAR(cross_forward_rank(hw, w, fwd(4, 1, 256)).first, cross_forward_floor_us(hw, w), 1e-6);
  // Backward, bf16: the tuned pass reads 18 bytes an element, so one element per thread
  // already sustains HBM's rate and both variants are predicted at the bytes' time; the
  // tie-break (instruction issue) favours 4 columns per thread.
  const auto one = cross_backward_rank(hw, w, bwd(1, 256, 1, 256)), four = cross_backward_rank(hw, w, bwd(4, 64, 1, 256));
  EXPECT_DOUBLE_EQ(four.first, one.first);
  EXPECT_LT(four.second, one.second);
}

}  // namespace
}  // namespace hetrec::tune
