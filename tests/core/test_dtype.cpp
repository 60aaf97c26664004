#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"

using namespace hetrec;

TEST(DType, Fp16KnownValues) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);  // max + half ulp rounds to infinity
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even -> 0
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 quanta -> 2 (even)
  // 1 + 2^-11 is exactly half way between 1 and 1 + 2^-10: ties to even (down).
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(NAN))));
  EXPECT_EQ(f16_to_f32(0x7C00), INFINITY);
}

TEST(DType, Bf16KnownValues) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie -> even
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3F818000u)), 0x3F82);  // tie -> even (up)
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3F808001u)), 0x3F81);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
}

TEST(DType, Fp8KnownValues) {
  EXPECT_EQ(f32_to_f8e4m3(1.0f), 0x38);
  EXPECT_EQ(f32_to_f8e4m3(448.0f), 0x7E);
  EXPECT_EQ(f32_to_f8e4m3(1e6f), 0x7E);        // saturates (no infinity in e4m3fn)
  EXPECT_EQ(f32_to_f8e4m3(-1e6f), 0xFE);
  EXPECT_EQ(f32_to_f8e4m3(std::ldexp(1.0f, -9)), 0x01);  // smallest subnormal
  EXPECT_TRUE(std::isnan(f8e4m3_to_f32(0x7F)));
  EXPECT_EQ(f32_to_f8e5m2(1.0f), 0x3C);
  EXPECT_EQ(f32_to_f8e5m2(57344.0f), 0x7B);
  EXPECT_EQ(f32_to_f8e5m2(1e6f), 0x7C);        // infinity
  EXPECT_EQ(f8e5m2_to_f32(0x7C), INFINITY);
  EXPECT_EQ(f8e5m2_to_f32(0x01), std::ldexp(1.0f, -16));
}

// Every finite bit pattern decodes and re-encodes to itself, and decoded values are
// strictly increasing over the positive patterns.
TEST(DType, ExhaustiveRoundTrip) {
  float prev = -1.0f;
  for (uint32_t b = 0; b < 0x7C00; ++b) {
    const float v = f16_to_f32(static_cast<uint16_t>(b));
    EXPECT_EQ(f32_to_f16(v), b);
    EXPECT_GT(v, prev);
    prev = v;
  }
  prev = -1.0f;
  for (uint32_t b = 0; b < 0x7F; ++b) {
    const float v = f8e4m3_to_f32(static_cast<uint8_t>(b));
    EXPECT_EQ(f32_to_f8e4m3(v), b);
    EXPECT_GT(v, prev);
    prev = v;
  }
  prev = -1.0f;
  for (uint32_t b = 0; b < 0x7C; ++b) {
    const float v = f8e5m2_to_f32(static_cast<uint8_t>(b));
    EXPECT_EQ(f32_to_f8e5m2(v), b);
    EXPECT_GT(v, prev);
    prev = v;
  }
  for (uint32_t b = 0; b < 0x7F80; b += 7) EXPECT_EQ(f32_to_bf16(bf16_to_f32(static_cast<uint16_t>(b))), b);
}

// Round-to-nearest picks the closer neighbour on random inputs (checked in double).
TEST(DType, NearestOnRandomInputs) {
  Rng rng(123);
  for (int i = 0; i < 20000; ++i) {
    const float x = static_cast<float>(rng.normal() * std::pow(10.0, rng.uniform() * 6 - 3));
    const double h = f16_to_f32(f32_to_f16(x));
    const double b = bf16_to_f32(f32_to_bf16(x));
    // Relative error at most half an ulp: 2^-11 (fp16 normal range) and 2^-8 (bf16).
    if (std::fabs(x) > 6.2e-5 && std::fabs(x) < 65000) {
      EXPECT_LE(std::fabs(h - x), std::fabs(x) * 0x1.0p-11 * 1.0000001);
    }
    EXPECT_LE(std::fabs(b - x), std::fabs(x) * 0x1.0p-8 * 1.0000001);
  }
}

// Stochastic rounding lands on one of the two neighbours and is unbiased in expectation.
TEST(DType, StochasticRoundingIsUnbiased) {
  Rng rng(7);
  const float x = 1.0f + 0.3f * std::ldexp(1.0f, -7);  // 30% of the way to the next bf16
  const float lo = 1.0f, hi = 1.0f + std::ldexp(1.0f, -7);
  double sum_bf = 0, sum_h = 0;
  const float xh = 1.0f + 0.3f * std::ldexp(1.0f, -10);
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const float r = bf16_to_f32(f32_to_bf16_sr(x, rng.next_u32()));
    ASSERT_TRUE(r == lo || r == hi);
    sum_bf += r;
    sum_h += f16_to_f32(f32_to_f16_sr(xh, rng.next_u32()));
  }
  EXPECT_NEAR(sum_bf / n, x, 2e-5);
  EXPECT_NEAR(sum_h / n, xh, 4e-6);
  // Exactly representable values never move.
  for (int i = 0; i < 100; ++i) EXPECT_EQ(f32_to_bf16_sr(1.5f, rng.next_u32()), f32_to_bf16(1.5f));
}

TEST(DType, NamesParse) {
  EXPECT_EQ(parse_dtype("bf16", "model.row_dtype"), DType::bf16);
  EXPECT_THROW(parse_dtype("float17", "model.row_dtype"), ConfigError);
  try {
    parse_dtype("float17", "model.row_dtype");
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("model.row_dtype"), std::string::npos);
  }
}
