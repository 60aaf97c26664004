// The divergence rule of train/divergence.h: the loss bound, which tensors are parameters,
// and the state check over every floating-point dtype a state holds.
#include "train/divergence.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/dtype.h"

using namespace hetrec;

namespace {

NamedTensor f32(const std::string& name, std::initializer_list<float> values) {
  Tensor t = Tensor::empty({static_cast<int64_t>(values.size())}, DType::f32);
  int64_t i = 0;
  for (float v : values) t.data<float>()[i++] = v;
  return {name, t};
}

NamedTensor half(const std::string& name, DType dtype, std::initializer_list<float> values) {
  Tensor t = Tensor::empty({static_cast<int64_t>(values.size())}, dtype);
  int64_t i = 0;
  for (float v : values) t.data<uint16_t>()[i++] = dtype == DType::bf16 ? f32_to_bf16(v) : f32_to_f16(v);
  return {name, t};
}

NamedTensor step_tensor() {
  Tensor t = Tensor::empty({1}, DType::i64);
  t.data<int64_t>()[0] = std::numeric_limits<int64_t>::max();  // integers are not checked
  return {"step", t};
}

}  // namespace

TEST(DivergenceRule, LossBoundIsAHundredTimesTheConstantPredictor) {
  EXPECT_NEAR(kLossBound, 100.0 * std::log(2.0), 1e-12);
  EXPECT_FALSE(loss_diverged(0.69));
  EXPECT_FALSE(loss_diverged(kLossBound));
  EXPECT_TRUE(loss_diverged(kLossBound * 1.0001));
  EXPECT_TRUE(loss_diverged(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_TRUE(loss_diverged(std::numeric_limits<double>::infinity()));
}

TEST(DivergenceRule, OptimizerSlotsAreToldFromParametersByTheirNames) {
  for (const char* slot : {"bottom_mlp.0.weight.sum", "top_mlp.1.bias.exp_avg", "cross_net.kernels.0.exp_avg_sq",
                           "embedding.t0.accumulator", "embedding.t0.accumulator@128,0"})
    EXPECT_TRUE(is_optimizer_slot(slot)) << slot;
  for (const char* param : {"bottom_mlp.0.weight", "cross_net.bias.1", "cross_net.W_kernels.0", "embedding.sum.weight",
                            "embedding.t0.weight@0,8"})
    EXPECT_FALSE(is_optimizer_slot(param)) << param;
}

TEST(DivergenceRule, AHealthyStateHasNoViolation) {
  EXPECT_FALSE(find_state_violation({f32("bottom_mlp.0.weight", {0.5f, -3.0f, 9999.0f}),
                                     f32("bottom_mlp.0.weight.sum", {1e30f}),  // an Adagrad sum may be large
                                     half("embedding.t0.weight", DType::bf16, {-9000.0f, 2.0f}),
                                     half("embedding.t1.weight", DType::f16, {0.25f}), step_tensor()}));
}

TEST(DivergenceRule, TheFirstOffendingElementIsNamed) {
  const auto big = find_state_violation({f32("a.weight", {1.0f}), f32("b.weight", {0.0f, 2e4f, NAN})});
  ASSERT_TRUE(big);
  EXPECT_EQ(big->tensor, "b.weight");
  EXPECT_EQ(big->index, 1);
  EXPECT_TRUE(big->parameter);
  EXPECT_EQ(big->describe(), "parameter 'b.weight' element 1 is 20000, beyond +-10000");

  const auto nan_slot = find_state_violation({f32("a.weight", {1.0f}), f32("a.weight.exp_avg_sq", {1.0f, 3.0f, NAN})});
  ASSERT_TRUE(nan_slot);
  EXPECT_FALSE(nan_slot->parameter);
  EXPECT_EQ(nan_slot->describe(), "optimizer slot 'a.weight.exp_avg_sq' element 2 is NaN");

  const auto inf16 = find_state_violation({half("embedding.t.weight", DType::f16, {1.0f, -INFINITY})});
  ASSERT_TRUE(inf16);
  EXPECT_EQ(inf16->describe(), "parameter 'embedding.t.weight' element 1 is -inf");

  const auto bf = find_state_violation({half("embedding.t.weight", DType::bf16, {-1e6f})});
  ASSERT_TRUE(bf);
  EXPECT_EQ(bf->index, 0);
  EXPECT_LT(bf->value, -kParameterBound);
}
