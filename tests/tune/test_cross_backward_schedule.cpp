// The cross net's backward schedule (tunable/cross_net/cross_backward_schedule.h), walked in
// double precision the way the engine walks it (each pass as the kernel computes it, each
// layer's chain term made from its own dz after its pass and kept in the buffer the
// schedule names), against the plain recurrence G_l = G_{l+1} + h_l,
// dz_l = G_{l+1} x0, dL/dx0 = G_0 + sum_l z_l G_{l+1}, for 1 to 10 layers.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "tunable/cross_net/cross_backward_schedule.h"

namespace hetrec::kernels {
namespace {

TEST(CrossBackwardSchedule, WalkedPassesGiveTheRecurrencesGradients) {
  Rng rng(91);
  const auto draw = [&] { return 2.0 * rng.uniform() - 1.0; };
  for (int layers = 1; layers <= 10; ++layers) {
    const double g_top = draw(), x0 = draw();
    std::vector<double> z(static_cast<std::size_t>(layers)), a(z.size());  // h_l = a_l dz_l
    for (std::size_t l = 0; l < z.size(); ++l) {
      z[l] = draw();
      a[l] = draw();
    }
    // The recurrence.
    std::vector<double> dz_ref(z.size());
    double G = g_top, dx0_ref = 0.0;
    for (int l = layers - 1; l >= 0; --l) {
      const auto i = static_cast<std::size_t>(l);
      dz_ref[i] = G * x0;
      dx0_ref += z[i] * G;
      G += a[i] * dz_ref[i];
    }
    dx0_ref += G;
    // The schedule: g, the accumulator, the term buffers (each with the layer it holds).
    const std::vector<CrossBackwardPass> passes = cross_backward_schedule(layers);
    ASSERT_EQ(passes.size(), static_cast<std::size_t>(layers));
    const int buffers = cross_backward_term_buffers(layers);
    EXPECT_LE(buffers, kMaxCrossTerms);
    EXPECT_EQ(cross_backward_uses_accumulator(layers), layers > kMaxCrossTerms + 1) << layers;
    std::vector<int> slot(static_cast<std::size_t>(layers), -1);
    for (const CrossBackwardPass& p : passes) slot[static_cast<std::size_t>(p.layer)] = p.term_slot;
    std::vector<double> buffer(static_cast<std::size_t>(buffers), NAN);
    std::vector<int> holds(static_cast<std::size_t>(buffers), -1);
    double g = g_top, acc = NAN, dx0 = NAN;
    for (std::size_t k = 0; k < passes.size(); ++k) {
      const CrossBackwardPass& p = passes[k];
      ASSERT_EQ(p.layer, layers - 1 - static_cast<int>(k));
      ASSERT_LE(static_cast<int>(p.terms.size()), kMaxCrossTerms);
      ASSERT_LE(static_cast<int>(p.direct.size()) + p.direct_first, static_cast<int>(p.terms.size()) + 1);
      ASSERT_EQ(p.bottom, p.layer == 0);
      double Gp = g, direct = p.accumulate ? acc : 0.0;
      for (std::size_t s = 0; s <= p.terms.size(); ++s) {
        const int j = static_cast<int>(s) - p.direct_first;
        if (j >= 0 && j < static_cast<int>(p.direct.size())) direct += z[static_cast<std::size_t>(p.direct[static_cast<std::size_t>(j)])] * Gp;
        if (s < p.terms.size()) {
          const int from = p.terms[s];
          const auto b = static_cast<std::size_t>(slot[static_cast<std::size_t>(from)]);
          ASSERT_EQ(b, s) << layers << " layers: the engine reads term s from buffer s";
          ASSERT_EQ(holds[b], from) << layers << " layers, pass of layer " << p.layer << " reads a stale buffer";
          Gp += buffer[b];
        }
      }
      EXPECT_NEAR(Gp * x0, dz_ref[static_cast<std::size_t>(p.layer)], 1e-12) << layers << " layers, layer " << p.layer;
      const double dz = Gp * x0;
      if (p.checkpoint) {
        g = Gp;
        acc = direct;
      }
      const double term = a[static_cast<std::size_t>(p.layer)] * dz;
      if (p.bottom) {
        dx0 = direct + Gp + term;
        ASSERT_EQ(p.term_slot, -1);
      } else {
        ASSERT_GE(p.term_slot, 0);
        buffer[static_cast<std::size_t>(p.term_slot)] = term;
        holds[static_cast<std::size_t>(p.term_slot)] = p.layer;
      }
    }
    EXPECT_NEAR(dx0, dx0_ref, 1e-12) << layers << " layers";
  }
}

TEST(CrossBackwardSchedule, ThreeLayersKeepNoRunningSums) {
  const std::vector<CrossBackwardPass> p = cross_backward_schedule(3);
  ASSERT_EQ(p.size(), 3u);
  // The top and middle passes write only dz: g, x0 and the terms read.
  for (int i = 0; i < 2; ++i) {
    EXPECT_FALSE(p[static_cast<std::size_t>(i)].checkpoint);
    EXPECT_TRUE(p[static_cast<std::size_t>(i)].direct.empty());
    EXPECT_EQ(cross_backward_pass_traffic(p[static_cast<std::size_t>(i)]).f32_writes, 0);
  }
  EXPECT_EQ(p[1].terms, std::vector<int>({2}));
  // The bottom one adds both terms and all three z's, and writes dx0.
  EXPECT_EQ(p[2].terms, std::vector<int>({2, 1}));
  EXPECT_EQ(p[2].direct, std::vector<int>({2, 1, 0}));
  const CrossPassTraffic t = cross_backward_pass_traffic(p[2]);
  EXPECT_EQ(t.f32_reads, 2);
  EXPECT_EQ(t.op_reads, 5);
  EXPECT_EQ(t.f32_writes, 1);
  EXPECT_DOUBLE_EQ(t.bytes(2.0), 24.0);
  EXPECT_EQ(cross_backward_term_buffers(3), 2);
  EXPECT_FALSE(cross_backward_uses_accumulator(3));
}

}  // namespace
}  // namespace hetrec::kernels
