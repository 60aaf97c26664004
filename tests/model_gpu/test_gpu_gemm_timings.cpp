// A profiled GPU step lists each of its cuBLASLt GEMMs with its device time
// (GpuModel::gemm_timings, cublaslt::Gemm::timings): the same calls in the same order
// every step, the cross net's six per layer among them, each timed inside the phases
// that hold it; an unprofiled (graph-captured) step and a prediction time none.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "../gpu/device_test_support.h"
#include "dlrm_test_inputs.h"
#include "model/gpu/gpu_dlrm.h"

namespace hetrec {
namespace {

constexpr int64_t kBatch = 256;
constexpr int kRank = 8;

TEST(GpuGemmTimings, AProfiledStepListsEachGemmWithItsDeviceTime) {
  HETREC_REQUIRE_GPU();
  const ModelConfig m = small_model(Arch::dcnv2, DType::f32, kRank);
  GpuModelOptions opts;
  opts.profile_phases = true;
  auto model = make_gpu_model(m, OptimConfig{}, opts);
  const StepRates rates{0.02f, 0.03f};
  std::vector<cublaslt::Gemm::Timing> first;
  for (int step = 0; step < 3; ++step) {
    const Batch b = make_batch(m, kBatch, 500 + static_cast<uint64_t>(step));
    model->train_step(b, rates);
    const std::vector<cublaslt::Gemm::Timing> calls = model->gemm_timings();
    ASSERT_FALSE(calls.empty()) << "step " << step;
    double gemm_ms = 0.0;
    for (const auto& c : calls) {
      EXPECT_FALSE(c.shape.empty());
      EXPECT_GT(c.flops, 0.0) << c.shape;
      EXPECT_TRUE(std::isfinite(c.ms) && c.ms > 0.0) << c.shape << ": " << c.ms << " ms";
      gemm_ms += c.ms;
    }
    // One stream while profiling: every GEMM lies inside the device phases.
    double device_phase_ms = 0.0;
    for (const auto& [name, ms] : model->phase_ms())
      if (name != "upload") device_phase_ms += ms;
    EXPECT_LE(gemm_ms, device_phase_ms * 1.01 + 1e-3) << "step " << step;

    // The cross net's GEMMs: V x and U (V x) forward; dU, d(V x), dV and the term through
    // x_l backward, each of 2 x batch x width x rank FLOPs; the bottom layer's term is
    // added to dL/dx0 (the only one of them that reads D).
    const double cross_flops = 2.0 * kBatch * static_cast<double>(m.interaction_width()) * kRank;
    int cross = 0, cross_accumulating = 0;
    for (const auto& c : calls)
      if (c.flops == cross_flops) {
        ++cross;
        cross_accumulating += c.accumulates ? 1 : 0;
      }
    EXPECT_EQ(cross, 6 * m.cross_layers);
    EXPECT_EQ(cross_accumulating, 1);

    if (step == 0) {
      first = calls;
    } else {
      ASSERT_EQ(calls.size(), first.size()) << "step " << step;
      for (std::size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i].shape, first[i].shape) << "call " << i;
    }
  }
  // A prediction after the step adds no call to the step's record.
  std::vector<float> logits(kBatch);
  model->predict(make_batch(m, kBatch, 900), logits);
  EXPECT_EQ(model->gemm_timings().size(), first.size());
}

TEST(GpuGemmTimings, UnprofiledStepsTimeNothing) {
  HETREC_REQUIRE_GPU();
  const ModelConfig m = small_model(Arch::dcnv2, DType::f32, kRank);
  auto model = make_gpu_model(m, OptimConfig{}, GpuModelOptions{});  // graph-captured steps
  for (int step = 0; step < 3; ++step) model->train_step(make_batch(m, kBatch, 600 + static_cast<uint64_t>(step)), {0.02f, 0.03f});
  EXPECT_TRUE(model->gemm_timings().empty());
}

}  // namespace
}  // namespace hetrec
