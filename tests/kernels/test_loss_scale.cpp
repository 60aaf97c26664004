// Dynamic loss scaling on the device (fp16 dense compute): the scaled loss gradient, the
// unscale-and-check pass against a double reference (poisoned margins must stay as they
// were), overflow detection, and the scale's update rule step by step.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "../gpu/device_test_support.h"
#include "core/rng.h"
#include "kernels/bce_loss.h"
#include "kernels/loss_scale.h"

namespace hetrec {
namespace {

kernels::LossScaleState state_of(float scale, int32_t clean = 0, int32_t overflow = 0) {
  kernels::LossScaleState s;
  s.scale = scale;
  s.inv_scale = 1.0f / scale;
  s.clean_steps = clean;
  s.overflow = overflow;
  return s;
}

kernels::LossScaleState read(const gpu::DeviceBuffer& b) { return testing::to_host<kernels::LossScaleState>(b, 1)[0]; }

TEST(LossScaleKernels, UnscaleMatchesDoubleReferenceAndLeavesTheMarginAlone) {
  HETREC_REQUIRE_GPU();
  const int64_t rows = 301, cols = 130, ld = 137;
  Rng rng(5);
  std::vector<float> g(static_cast<std::size_t>(rows * ld));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < ld; ++c)
      g[static_cast<std::size_t>(r * ld + c)] =
          c < cols ? static_cast<float>(rng.normal() * 1024.0) : std::numeric_limits<float>::quiet_NaN();
  gpu::DeviceBuffer dg = testing::to_device(g);
  gpu::DeviceBuffer st = testing::to_device(std::vector<kernels::LossScaleState>{state_of(1024.0f)});
  gpu::DeviceBuffer skip = testing::to_device(std::vector<int32_t>{0});
  kernels::unscale_and_check(dg.as<float>(), rows, cols, ld, st.as<kernels::LossScaleState>(), skip.as<int32_t>(),
                             nullptr);
  const auto got = testing::to_host<float>(dg, g.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < ld; ++c) {
      const auto i = static_cast<std::size_t>(r * ld + c);
      if (c >= cols) {
        ASSERT_TRUE(std::isnan(got[i])) << "wrote the margin at " << r << "," << c;
        continue;
      }
      // A power-of-two scale: the unscaled value is exact.
      ASSERT_EQ(static_cast<double>(got[i]), static_cast<double>(g[i]) / 1024.0) << r << "," << c;
    }
  EXPECT_EQ(testing::to_host<int32_t>(skip, 1)[0], 0);
  EXPECT_EQ(read(st).overflow, 0);

  // One infinity, or one NaN, anywhere in the block raises both flags.
  for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    std::vector<float> h = g;
    for (float& x : h)
      if (std::isnan(x)) x = 0.0f;  // margins finite this time
    h[static_cast<std::size_t>(200 * ld + 77)] = bad;
    gpu::DeviceBuffer dh = testing::to_device(h);
    gpu::DeviceBuffer st2 = testing::to_device(std::vector<kernels::LossScaleState>{state_of(8.0f)});
    gpu::DeviceBuffer skip2 = testing::to_device(std::vector<int32_t>{0});
    kernels::unscale_and_check(dh.as<float>(), rows, cols, ld, st2.as<kernels::LossScaleState>(), skip2.as<int32_t>(),
                               nullptr);
    EXPECT_EQ(testing::to_host<int32_t>(skip2, 1)[0], 1);
    EXPECT_EQ(read(st2).overflow, 1);
  }
  // A value that overflows only through the unscaling (a scale below 1) is caught too.
  std::vector<float> big(4, 3e38f);
  gpu::DeviceBuffer db = testing::to_device(big);
  gpu::DeviceBuffer st3 = testing::to_device(std::vector<kernels::LossScaleState>{state_of(0.25f)});
  gpu::DeviceBuffer skip3 = testing::to_device(std::vector<int32_t>{0});
  kernels::unscale_and_check(db.as<float>(), 1, 4, 4, st3.as<kernels::LossScaleState>(), skip3.as<int32_t>(), nullptr);
  EXPECT_EQ(testing::to_host<int32_t>(skip3, 1)[0], 1);
}

TEST(LossScaleKernels, UpdateHalvesOnOverflowAndGrowsAfterTheInterval) {
  HETREC_REQUIRE_GPU();
  kernels::LossScaleRule rule;
  rule.growth_interval = 3;
  gpu::DeviceBuffer st = testing::to_device(std::vector<kernels::LossScaleState>{state_of(1024.0f)});
  auto* p = st.as<kernels::LossScaleState>();
  // Clean, clean, clean -> doubled at the third.
  const float want_clean[] = {1024.0f, 1024.0f, 2048.0f};
  const int32_t want_count[] = {1, 2, 0};
  for (int i = 0; i < 3; ++i) {
    kernels::update_loss_scale(p, rule, nullptr);
    const auto s = read(st);
    EXPECT_EQ(s.scale, want_clean[i]) << i;
    EXPECT_EQ(s.clean_steps, want_count[i]) << i;
    EXPECT_EQ(s.inv_scale, 1.0f / want_clean[i]) << i;
  }
  // Two clean steps, then an overflow: halved, count reset.
  kernels::update_loss_scale(p, rule, nullptr);
  kernels::update_loss_scale(p, rule, nullptr);
  const int32_t one = 1;
  gpu::memcpy_sync(&p->overflow, &one, sizeof(one), gpu::CopyKind::host_to_device);
  kernels::update_loss_scale(p, rule, nullptr);
  auto s = read(st);
  EXPECT_EQ(s.scale, 1024.0f);
  EXPECT_EQ(s.clean_steps, 0);
  EXPECT_EQ(s.inv_scale, 1.0f / 1024.0f);
  // The bounds hold.
  gpu::DeviceBuffer lo = testing::to_device(std::vector<kernels::LossScaleState>{state_of(rule.min_scale, 0, 1)});
  kernels::update_loss_scale(lo.as<kernels::LossScaleState>(), rule, nullptr);
  EXPECT_EQ(read(lo).scale, rule.min_scale);
  gpu::DeviceBuffer hi = testing::to_device(std::vector<kernels::LossScaleState>{state_of(rule.max_scale, 2, 0)});
  kernels::update_loss_scale(hi.as<kernels::LossScaleState>(), rule, nullptr);
  EXPECT_EQ(read(hi).scale, rule.max_scale);
}

TEST(LossScaleKernels, BceGradientIsScaledExactly) {
  HETREC_REQUIRE_GPU();
  const int64_t n = 5000;
  Rng rng(3);
  std::vector<float> logits(static_cast<std::size_t>(n)), labels(static_cast<std::size_t>(n));
  for (auto& x : logits) x = static_cast<float>(3.0 * rng.normal());
  for (auto& y : labels) y = rng.uniform() < 0.4 ? 1.0f : 0.0f;
  gpu::DeviceBuffer dl = testing::to_device(logits), dy = testing::to_device(labels);
  gpu::DeviceBuffer g1 = testing::poisoned_floats(static_cast<std::size_t>(n));
  gpu::DeviceBuffer g2 = testing::poisoned_floats(static_cast<std::size_t>(n));
  gpu::DeviceBuffer loss = testing::to_device(std::vector<double>{0.0});
  gpu::DeviceBuffer scale = testing::to_device(std::vector<float>{65536.0f});
  gpu::DeviceBuffer ws(kernels::bce_loss_workspace_bytes(n));
  kernels::bce_with_logits(dl.as<float>(), 1, dy.as<float>(), n, g1.as<float>(), 1, loss.as<double>(), nullptr,
                           ws.get(), ws.bytes(), nullptr);
  kernels::bce_with_logits(dl.as<float>(), 1, dy.as<float>(), n, g2.as<float>(), 1, loss.as<double>(), nullptr,
                           ws.get(), ws.bytes(), nullptr, scale.as<float>());
  const auto a = testing::to_host<float>(g1, static_cast<std::size_t>(n));
  const auto b = testing::to_host<float>(g2, static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const double sig = 1.0 / (1.0 + std::exp(-static_cast<double>(logits[k])));
    ASSERT_NEAR(b[k], (sig - labels[k]) / static_cast<double>(n) * 65536.0, 1e-7 * 65536.0 / static_cast<double>(n));
    ASSERT_EQ(b[k], a[k] * 65536.0f) << i;  // exactly the unscaled gradient times the scale
  }
}

}  // namespace
}  // namespace hetrec
