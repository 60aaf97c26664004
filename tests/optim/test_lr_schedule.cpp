#include <gtest/gtest.h>

#include "model/model.h"
#include "optim/lr_schedule.h"

using namespace hetrec;

namespace {

OptimConfig schedule(int64_t warmup, int64_t decay_start, int64_t decay_steps, double power) {
  OptimConfig o;
  o.lr = 0.8;
  o.sparse_lr = 0.02;
  o.warmup_steps = warmup;
  o.decay_start = decay_start;
  o.decay_steps = decay_steps;
  o.decay_power = power;
  return o;
}

}  // namespace

// Values at chosen steps, worked out by hand from the documented formula:
// warm-up (step + 1) / 4; constant; decay ((10 + 5 - step) / 5)^2 from step 10; 0 from 15.
TEST(LrSchedule, WarmupConstantPolynomialDecay) {
  const OptimConfig o = schedule(4, 10, 5, 2.0);
  const struct {
    int64_t step;
    double scale;
  } cases[] = {{0, 0.25}, {1, 0.5}, {2, 0.75}, {3, 1.0}, {4, 1.0}, {9, 1.0}, {10, 1.0}, {11, 0.64},
               {12, 0.36}, {13, 0.16}, {14, 0.04}, {15, 0.0}, {16, 0.0}, {1000, 0.0}};
  for (const auto& c : cases) {
    EXPECT_DOUBLE_EQ(lr_schedule_scale(o, c.step), c.scale) << "step " << c.step;
    const StepRates r = scheduled_rates(o, c.step);
    EXPECT_FLOAT_EQ(r.dense_lr, static_cast<float>(0.8 * c.scale)) << "step " << c.step;
    EXPECT_FLOAT_EQ(r.sparse_lr, static_cast<float>(0.02 * c.scale)) << "step " << c.step;
  }
}

TEST(LrSchedule, LinearDecayPowerAndNoWarmup) {
  const OptimConfig o = schedule(0, 3, 4, 1.0);
  EXPECT_DOUBLE_EQ(lr_schedule_scale(o, 0), 1.0);
  EXPECT_DOUBLE_EQ(lr_schedule_scale(o, 2), 1.0);
  EXPECT_DOUBLE_EQ(lr_schedule_scale(o, 3), 1.0);
  EXPECT_DOUBLE_EQ(lr_schedule_scale(o, 4), 0.75);
  EXPECT_DOUBLE_EQ(lr_schedule_scale(o, 6), 0.25);
  EXPECT_DOUBLE_EQ(lr_schedule_scale(o, 7), 0.0);
}

TEST(LrSchedule, DecayOffWhenStartOrLengthIsZero) {
  for (const OptimConfig& o : {schedule(2, 0, 100, 2.0), schedule(2, 5, 0, 2.0)}) {
    EXPECT_DOUBLE_EQ(lr_schedule_scale(o, 0), 0.5);
    EXPECT_DOUBLE_EQ(lr_schedule_scale(o, 1), 1.0);
    EXPECT_DOUBLE_EQ(lr_schedule_scale(o, 50), 1.0);
    EXPECT_DOUBLE_EQ(lr_schedule_scale(o, 1000000), 1.0);
  }
}

TEST(LrSchedule, WarmupTakesPrecedenceOverAnEarlyDecay) {
  const OptimConfig o = schedule(8, 2, 10, 2.0);
  EXPECT_DOUBLE_EQ(lr_schedule_scale(o, 3), 0.5);  // still warming up: 4 / 8
  EXPECT_DOUBLE_EQ(lr_schedule_scale(o, 8), 0.16);  // ((2 + 10 - 8) / 10)^2
}
