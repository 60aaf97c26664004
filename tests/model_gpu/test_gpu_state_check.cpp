// The GPU engine's state check in device memory (GpuDlrm::state_violation) against the
// host check of the same values (model/state_check.h on state()): planted NaN, infinite
// and out-of-bound values in parameters, optimizer slots and tables of every row dtype,
// written through state() as a checkpoint load writes them and taken back by a predict.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "../gpu/device_test_support.h"
#include "dlrm_test_inputs.h"
#include "core/dtype.h"
#include "core/rng.h"
#include "model/gpu/gpu_dlrm.h"
#include "model/state_check.h"

namespace hetrec {
namespace {

bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

class GpuStateCheck : public ::testing::TestWithParam<DType> {};

TEST_P(GpuStateCheck, DeviceCheckFindsWhatTheHostCheckFinds) {
  HETREC_REQUIRE_GPU();
  const ModelConfig m = small_model(Arch::dcnv2, GetParam(), 4);
  OptimConfig o;  // Adagrad dense and sparse: ".sum" and ".accumulator" slots
  auto gpu = make_gpu_model(m, o);
  const StepRates rates{0.02f, 0.02f};
  for (int step = 0; step < 2; ++step) gpu->train_step(make_batch(m, 64, 90 + static_cast<uint64_t>(step)), rates);
  EXPECT_FALSE(gpu->state_violation().has_value()) << "a healthy state";

  Rng rng(417);
  const float bad_values[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), 3.0e4f, -2.0e4f};
  int slots_hit = 0, parameters_hit = 0;
  for (int trial = 0; trial < 16; ++trial) {
    auto fresh = make_gpu_model(m, o);
    fresh->train_step(make_batch(m, 64, 90), rates);
    const std::vector<NamedTensor> state = fresh->state();
    std::vector<std::size_t> floats;
    for (std::size_t i = 0; i < state.size(); ++i) {
      const DType t = state[i].tensor.dtype();
      if (t == DType::f32 || t == DType::bf16 || t == DType::f16) floats.push_back(i);
    }
    // One or two planted values in random tensors at random elements.
    const int planted = 1 + static_cast<int>(rng.below(2));
    for (int k = 0; k < planted; ++k) {
      const NamedTensor& nt = state[floats[rng.below(floats.size())]];
      const auto e = static_cast<std::size_t>(rng.below(static_cast<uint64_t>(nt.tensor.numel())));
      store_from_f32(nt.tensor.raw(), e, nt.tensor.dtype(), bad_values[rng.below(5)]);
    }
    const std::optional<StateViolation> want = find_state_violation(state);
    // A predict takes the written state back to the device; the check then runs there.
    Batch b = make_batch(m, 32, 5);
    std::vector<float> logits(32);
    fresh->predict(b, logits);
    const std::optional<StateViolation> got = fresh->state_violation();
    ASSERT_EQ(got.has_value(), want.has_value()) << "trial " << trial;
    if (!want) continue;  // an out-of-bound value in a slot is no violation
    (want->parameter ? parameters_hit : slots_hit) += 1;
    EXPECT_EQ(got->tensor, want->tensor) << "trial " << trial;
    EXPECT_EQ(got->index, want->index) << want->tensor;
    EXPECT_TRUE(same_value(got->value, want->value)) << want->tensor << ": " << got->value << " vs " << want->value;
    EXPECT_EQ(got->parameter, want->parameter) << want->tensor;
    EXPECT_EQ(got->describe(), want->describe());
  }
  EXPECT_GT(parameters_hit, 0);
  // After state() exposes host copies the host check runs on them, with the same answer.
  EXPECT_FALSE(gpu->state_violation().has_value());
  (void)gpu->state();
  EXPECT_FALSE(gpu->state_violation().has_value());
}

INSTANTIATE_TEST_SUITE_P(RowTypes, GpuStateCheck, ::testing::Values(DType::f32, DType::bf16, DType::f16),
                         [](const ::testing::TestParamInfo<DType>& i) { return std::string(dtype_name(i.param)); });

}  // namespace
}  // namespace hetrec
