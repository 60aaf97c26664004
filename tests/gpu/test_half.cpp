// gpu/half.h's 16-bit conversions (compiled here for the host; the kernels compile the
// same inline code for the device) against core/dtype.h, bit for bit, on fresh random
// values over the whole fp32 range and on the edge cases.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "core/dtype.h"
#include "core/rng.h"
#include "gpu/half.h"

namespace hetrec {
namespace {

std::vector<float> probe_values(uint64_t seed, int count) {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, 70000.0f, -70000.0f,
                          6.1035156e-05f, 5.9604645e-08f, 2.9802322e-08f, 1e-40f, 3.3895314e38f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::max()};
  Rng rng(seed);
  for (int i = 0; i < count; ++i) {
    // Random bit patterns cover every exponent; scaled normals cover the common range.
    if (i % 2 == 0) v.push_back(std::bit_cast<float>(rng.next_u32()));
    else v.push_back(static_cast<float>(rng.normal() * std::ldexp(1.0, static_cast<int>(rng.below(60)) - 30)));
  }
  return v;
}

bool same_half(uint16_t a, uint16_t b, bool nan_ok) {
  return a == b || (nan_ok && (a & 0x7C00u) == 0x7C00u && (a & 0x3FFu) && (b & 0x7C00u) == 0x7C00u && (b & 0x3FFu));
}

TEST(HalfConversions, Bf16MatchesCoreBitForBit) {
  Rng rng(21);
  for (float x : probe_values(3, 200000)) {
    ASSERT_EQ(gpu::f32_to_bf16_bits(x), f32_to_bf16(x)) << x;
    const uint32_t r = rng.next_u32();
    ASSERT_EQ(gpu::f32_to_bf16_bits_sr(x, r), f32_to_bf16_sr(x, r)) << x << " r=" << r;
    const uint16_t b = f32_to_bf16(x);
    const float back = gpu::bf16_bits_to_f32(b);
    if (std::isnan(back)) ASSERT_TRUE(std::isnan(bf16_to_f32(b)));
    else ASSERT_EQ(back, bf16_to_f32(b));
  }
}

TEST(HalfConversions, F16MatchesCoreBitForBit) {
  Rng rng(22);
  for (float x : probe_values(4, 200000)) {
    ASSERT_TRUE(same_half(gpu::f32_to_f16_bits(x), f32_to_f16(x), std::isnan(x))) << x;
    const uint32_t r = rng.next_u32();
    ASSERT_TRUE(same_half(gpu::f32_to_f16_bits_sr(x, r), f32_to_f16_sr(x, r), std::isnan(x))) << x << " r=" << r;
  }
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float a = gpu::f16_bits_to_f32(static_cast<uint16_t>(h));
    const float b = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(b)) ASSERT_TRUE(std::isnan(a)) << h;
    else ASSERT_EQ(std::bit_cast<uint32_t>(a), std::bit_cast<uint32_t>(b)) << h;
  }
}

}  // namespace
}  // namespace hetrec
