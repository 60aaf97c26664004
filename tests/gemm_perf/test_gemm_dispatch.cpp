// The one GEMM dispatch (dispatch/gemm_dispatch.h): the request's problem, the runner it
// picks against the selector and the small-GEMM kernels, the cross layer's GEMM lists, and
// the error when nothing can run a request.
#include <gtest/gtest.h>

#include "core/error.h"
#include "dispatch/gemm_dispatch.h"
#include "gemm_perf_test_support.h"

namespace hetrec {
namespace {

TEST(GemmDispatch, RequestBecomesTheModelsProblem) {
  const GemmRequest r{4096, 512, 3456, false, true, GemmEpilogue::bias, true, DType::bf16, DType::bf16, true};
  const GemmProblem p = gemm_request_problem(r);
  EXPECT_EQ(p.m, 4096);
  EXPECT_EQ(p.n, 512);
  EXPECT_EQ(p.k, 3456);
  EXPECT_TRUE(p.trans_b);
  EXPECT_TRUE(p.accumulate);
  EXPECT_EQ(p.a_type, DType::bf16);
  EXPECT_EQ(p.c_type, DType::bf16);
  EXPECT_FALSE(p.allow_tf32);  // TF32 concerns fp32 operands only
  EXPECT_TRUE(gemm_request_problem({64, 64, 64, false, false, GemmEpilogue::none, false, DType::f32, DType::f32, true})
                  .allow_tf32);
}

TEST(GemmDispatch, LibraryChoiceIsTheSelectorsAndSmallGemmsCompeteOnPredictedTime) {
  const Hardware hw = test::shipped_hardware("h200_sxm");
  const GemmSelector selector = GemmSelector::for_hardware(hw, test::shipped_params(hw));
  const GemmRequest big{65536, 1024, 1024, false, true, GemmEpilogue::bias_relu, false, DType::bf16, DType::bf16, false};
  const GemmDispatchChoice c = GemmDispatch(selector).choose(big);
  EXPECT_EQ(c.runner, GemmRunner::library);
  EXPECT_DOUBLE_EQ(c.predicted_us, selector.select(gemm_request_problem(big)).estimate.time_us);
  EXPECT_GT(c.launch_us, 0.0);
  // A top MLP's last layer (N = 1): the small-GEMM kernels apply.
  const GemmRequest narrow{65536, 1, 256, false, true, GemmEpilogue::bias, false, DType::f32, DType::f32, false};
  const GemmDispatchChoice with_small = GemmDispatch(selector, true).choose(narrow);
  const GemmDispatchChoice library_only = GemmDispatch(selector, false).choose(narrow);
  EXPECT_EQ(library_only.runner, GemmRunner::library);
  const auto pick = tune::pick_small_gemm(hw, gemm_request_problem(narrow), selector.params());
  ASSERT_TRUE(pick.has_value());
  EXPECT_EQ(with_small.runner == GemmRunner::small_gemm, pick->predicted_us < library_only.predicted_us);
  EXPECT_LE(with_small.predicted_us, library_only.predicted_us);
}

TEST(GemmDispatch, NoRunnerIsAConfigErrorNamingTheProblem) {
  const Hardware hw = test::shipped_hardware("h200_sxm");
  const GemmSelector empty(hw, test::shipped_params(hw), {});
  try {
    (void)GemmDispatch(empty).choose({4096, 512, 512, false, true, GemmEpilogue::none, false, DType::bf16, DType::f32, false});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("M=4096"), std::string::npos) << e.what();
  }
}

TEST(GemmDispatch, CrossLayerGemmsAsTheCrossNetIssuesThem) {
  const auto fwd = cross_layer_forward_gemms(16384, 3456, 512, true, DType::bf16, false);
  ASSERT_EQ(fwd.size(), 2u);
  EXPECT_EQ(fwd[0].request.n, 512);
  EXPECT_EQ(fwd[1].request.epilogue, GemmEpilogue::bias);
  EXPECT_EQ(fwd[1].request.output, DType::bf16);
  EXPECT_EQ(cross_layer_forward_gemms(16384, 1024, 0, false, DType::bf16, true).size(), 1u);
  const auto bottom = cross_layer_backward_gemms(16384, 3456, 512, true, DType::bf16, false, true);
  ASSERT_EQ(bottom.size(), 4u);
  EXPECT_EQ(bottom[0].request.output, DType::f32);  // dU: a weight gradient in fp32
  EXPECT_TRUE(bottom[3].request.accumulate);       // dx added to dx0 at the bottom
  EXPECT_EQ(bottom[3].request.output, DType::f32);
  const auto upper = cross_layer_backward_gemms(16384, 3456, 512, true, DType::bf16, false, false);
  EXPECT_FALSE(upper[3].request.accumulate);
  EXPECT_EQ(upper[3].request.output, DType::bf16);
  EXPECT_EQ(cross_layer_backward_gemms(16384, 1024, 0, false, DType::bf16, false, false).size(), 2u);
}

}  // namespace
}  // namespace hetrec
