#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/rng.h"
#include "optim/sparse_row_storage.h"

using namespace hetrec;

namespace {

// fp32 values around every fp16 and bf16 boundary that matters: zero, the subnormal and
// normal edges, rounding ties, the largest finite values, infinities and NaN.
std::vector<float> edge_values() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.0f, 65520.0f, 65535.9f, 65536.0f, 1e30f,
                          std::ldexp(1.0f, -14), std::ldexp(1.0f, -15), std::ldexp(1.0f, -24), std::ldexp(1.0f, -25),
                          std::ldexp(3.0f, -25), 1.0f + std::ldexp(1.0f, -11), 1.0f + 3 * std::ldexp(1.0f, -11),
                          std::bit_cast<float>(0x7F7FFFFFu), INFINITY, -INFINITY, NAN};
  const std::size_t base = v.size();
  for (std::size_t i = 0; i < base; ++i) {
    v.push_back(std::nextafter(v[i], INFINITY));
    v.push_back(std::nextafter(v[i], -INFINITY));
    v.push_back(-v[i]);
  }
  return v;
}

}  // namespace

TEST(SparseRowStorage, Fp16DecodeMatchesCoreForEveryPattern) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float expect = f16_to_f32(static_cast<uint16_t>(b));
    const float got = fast_f16_to_f32(static_cast<uint16_t>(b));
    if (std::isnan(expect))
      ASSERT_TRUE(std::isnan(got)) << "pattern " << b;
    else
      ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(expect)) << "pattern " << b;
  }
}

// A stride through all fp32 bit patterns (every exponent, both signs) plus the edges.
TEST(SparseRowStorage, Fp16RoundToNearestMatchesCore) {
  std::vector<float> values = edge_values();
  constexpr uint32_t kStride = 4099;  // prime: visits every low-bit pattern class
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += kStride) values.push_back(std::bit_cast<float>(static_cast<uint32_t>(u)));
  for (float x : values) ASSERT_EQ(fast_f32_to_f16(x), f32_to_f16(x)) << "x = " << x << " bits " << std::bit_cast<uint32_t>(x);
}

TEST(SparseRowStorage, StochasticRoundingMatchesCore) {
  Rng rng(3);
  std::vector<float> values = edge_values();
  for (int i = 0; i < 400000; ++i) values.push_back(std::bit_cast<float>(rng.next_u32()));
  // Values inside the fp16 range, where the fast path does the work.
  for (int i = 0; i < 400000; ++i) values.push_back(static_cast<float>(std::ldexp(2.0 * rng.uniform() - 1.0, static_cast<int>(rng.below(32)) - 16)));
  const uint32_t fixed_bits[] = {0u, 0xFFFFFFFFu, 1u << 19, (1u << 19) - 1, 1u << 16, (1u << 16) - 1, 0x80000000u};
  for (float x : values) {
    for (uint32_t r : fixed_bits) {
      ASSERT_EQ(fast_f32_to_f16_sr(x, r), f32_to_f16_sr(x, r)) << "fp16 x = " << x << " r = " << r;
      ASSERT_EQ(fast_f32_to_bf16_sr(x, r), f32_to_bf16_sr(x, r)) << "bf16 x = " << x << " r = " << r;
    }
    const uint32_t r = rng.next_u32();
    ASSERT_EQ(fast_f32_to_f16_sr(x, r), f32_to_f16_sr(x, r)) << "fp16 x = " << x << " r = " << r;
    ASSERT_EQ(fast_f32_to_bf16_sr(x, r), f32_to_bf16_sr(x, r)) << "bf16 x = " << x << " r = " << r;
  }
}

// The documented draws: row_key = hash_combine(hash_combine(hash_combine(hash_combine(
// seed, "round"), step), table), row); element 2k uses the high and 2k + 1 the low half of
// mix64(row_key + k); an odd last element uses the high half of its own draw.
TEST(SparseRowStorage, RowRoundingUsesDocumentedDraws) {
  constexpr int kDim = 7;
  constexpr uint64_t kRoundingDomain = 0x726F756E64ull;
  Rng rng(8);
  float values[kDim];
  for (float& v : values) v = static_cast<float>(2.0 * rng.uniform() - 1.0);
  const uint64_t seed = 99;
  const int64_t step = 12, row = 4567;
  const int table = 3;
  const uint64_t row_key = rounding_row_key(rounding_table_key(seed, step, table), row);
  EXPECT_EQ(row_key, hash_combine(hash_combine(hash_combine(hash_combine(seed, kRoundingDomain), 12), 3), 4567));
  uint16_t f16[kDim], bf16[kDim];
  for (int i = 0; i < kDim; ++i) f16[i] = bf16[i] = 0xDEAD;  // poison
  store_row_stochastic<F16Rows>(f16, values, kDim, row_key);
  store_row_stochastic<BF16Rows>(bf16, values, kDim, row_key);
  for (int e = 0; e < kDim; ++e) {
    const uint64_t draw = mix64(row_key + static_cast<uint64_t>(e / 2));
    const auto r = static_cast<uint32_t>(e % 2 == 0 ? draw >> 32 : draw);
    EXPECT_EQ(f16[e], f32_to_f16_sr(values[e], r)) << "element " << e;
    EXPECT_EQ(bf16[e], f32_to_bf16_sr(values[e], r)) << "element " << e;
  }
  // Keys depend on every coordinate.
  const uint64_t table_key = rounding_table_key(seed, step, table);
  EXPECT_NE(rounding_table_key(seed, step + 1, table), table_key);
  EXPECT_NE(rounding_table_key(seed, step, table + 1), table_key);
  EXPECT_NE(rounding_table_key(seed + 1, step, table), table_key);
  EXPECT_NE(rounding_row_key(table_key, row + 1), row_key);
}
