// The fp32 -> bf16 / fp16 matrix copies (the 16-bit GEMMs' operands): every element of the
// block equals core/dtype.h's round-to-nearest-even conversion and is within half a unit
// in the last place of the double value; nothing outside the block is written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../gpu/device_test_support.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"
#include "kernels/convert.h"

namespace hetrec {
namespace {

constexpr uint16_t kPoison = 0xFFFF;  // a NaN in bf16 and in fp16: shows unwritten elements

// Widening is exact: every 16-bit pattern of random values (and subnormals, infinities)
// becomes the host's fp32 value; nothing past n is written.
TEST(ConvertKernel, WidenSixteenBitIsExact) {
  HETREC_REQUIRE_GPU();
  for (DType t : {DType::bf16, DType::f16}) {
    const int64_t n = 1000;
    Rng rng(91);
    std::vector<uint16_t> bits(static_cast<std::size_t>(n));
    for (auto& b : bits) b = static_cast<uint16_t>(rng.next_u64() & 0xFFFF);
    bits[0] = t == DType::bf16 ? f32_to_bf16(1e-40f) : f32_to_f16(3e-6f);  // subnormal
    bits[1] = t == DType::bf16 ? f32_to_bf16(INFINITY) : f32_to_f16(1e6f);  // infinity
    gpu::DeviceBuffer in = testing::to_device(bits);
    gpu::DeviceBuffer out = testing::poisoned_floats(static_cast<std::size_t>(n + 1));
    kernels::widen_16bit(in.as<uint16_t>(), out.as<float>(), n, t, nullptr);
    const auto got = testing::to_host<float>(out, static_cast<std::size_t>(n + 1));
    for (int64_t i = 0; i < n; ++i) {
      const float want = t == DType::bf16 ? bf16_to_f32(bits[static_cast<std::size_t>(i)])
                                          : f16_to_f32(bits[static_cast<std::size_t>(i)]);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got[static_cast<std::size_t>(i)])) << i;
      } else {
        ASSERT_EQ(got[static_cast<std::size_t>(i)], want) << dtype_name(t) << " " << i;
      }
    }
    EXPECT_TRUE(std::isnan(got[static_cast<std::size_t>(n)])) << "wrote past n";
  }
  gpu::DeviceBuffer b = testing::poisoned_floats(4);
  EXPECT_THROW(kernels::widen_16bit(b.as<uint16_t>(), b.as<float>(), 2, DType::f32, nullptr), InternalError);
}

TEST(ConvertKernel, F32ToBf16MatrixRoundsToNearestEvenWithinTheBlock) {
  HETREC_REQUIRE_GPU();
  struct Case {
    int64_t rows, cols, ld_in, ld_out;
  };
  uint64_t seed = 7;
  for (const Case c : {Case{1, 1, 1, 1}, Case{300, 13, 13, 16}, Case{77, 96, 101, 96}, Case{4096, 37, 40, 37},
                       Case{1, 70001, 70001, 70001}, Case{257, 96, 96, 96} /* contiguous: 4 per thread */}) {
    Rng rng(++seed);
    std::vector<float> in(static_cast<std::size_t>(c.rows * c.ld_in));
    for (float& x : in) x = static_cast<float>(rng.normal() * std::exp(4.0 * rng.normal()));  // wide exponents
    // Ties and specials: a value exactly halfway between two bf16 (even and odd lower
    // neighbour), the largest finite float, a denormal, zeros, infinities and NaN.
    const float specials[] = {1.00390625f, 1.01171875f, -1.00390625f, std::numeric_limits<float>::max(), 1e-40f, 0.0f,
                              -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN()};
    for (std::size_t i = 0; i < std::size(specials) && i < in.size(); ++i) in[i] = specials[i];
    gpu::DeviceBuffer din = testing::to_device(in);
    gpu::DeviceBuffer dout = testing::to_device(std::vector<uint16_t>(static_cast<std::size_t>(c.rows * c.ld_out), kPoison));
    kernels::f32_to_16bit_matrix(din.as<float>(), c.ld_in, dout.as<uint16_t>(), c.ld_out, c.rows, c.cols, DType::bf16,
                                 nullptr);
    const auto got = testing::to_host<uint16_t>(dout, static_cast<std::size_t>(c.rows * c.ld_out));
    for (int64_t r = 0; r < c.rows; ++r) {
      for (int64_t col = 0; col < c.ld_out; ++col) {
        const uint16_t g = got[static_cast<std::size_t>(r * c.ld_out + col)];
        if (col >= c.cols) {
          ASSERT_EQ(g, kPoison) << "wrote outside the block at " << r << "," << col;
          continue;
        }
        const float x = in[static_cast<std::size_t>(r * c.ld_in + col)];
        if (std::isnan(x)) {
          ASSERT_TRUE(std::isnan(bf16_to_f32(g))) << r << "," << col;
          continue;
        }
        ASSERT_EQ(g, f32_to_bf16(x)) << "x=" << x << " at " << r << "," << col;
        if (std::isfinite(x) && std::fabs(x) < 3.38e38f) {
          const double err = std::fabs(static_cast<double>(bf16_to_f32(g)) - static_cast<double>(x));
          // Half a bf16 ulp: 2^-8 relative for normal values; bf16 subnormals are spaced
          // 2^-133 apart (fp32's exponent range, 7 stored bits), so half of that below.
          ASSERT_LE(err, std::max(std::ldexp(std::fabs(static_cast<double>(x)), -8), std::ldexp(1.0, -134))) << "x=" << x;
        }
      }
    }
    // The ties: 1 + 2^-8 rounds down to 1 (even), 1 + 3 * 2^-8 up to 1 + 2^-6.
    if (c.cols >= 2) {
      EXPECT_EQ(bf16_to_f32(got[0]), 1.0f);
      EXPECT_EQ(bf16_to_f32(got[1]), 1.015625f);
    }
  }
}

TEST(ConvertKernel, F32ToF16MatrixRoundsToNearestEvenAndOverflowsToInfinity) {
  HETREC_REQUIRE_GPU();
  const int64_t rows = 513, cols = 40, ld_in = 41, ld_out = 48;
  Rng rng(99);
  std::vector<float> in(static_cast<std::size_t>(rows * ld_in));
  // Magnitudes from fp16's subnormals (2^-24) to beyond its largest finite value.
  for (float& x : in) x = static_cast<float>(rng.normal() * std::exp2(-26.0 + 44.0 * rng.uniform()));
  const float specials[] = {65504.0f, 65519.99f, 65520.0f, -1e6f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 0x1p-25f,
                            0.0f, -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  for (std::size_t i = 0; i < std::size(specials); ++i) in[i] = specials[i];
  gpu::DeviceBuffer din = testing::to_device(in);
  gpu::DeviceBuffer dout = testing::to_device(std::vector<uint16_t>(static_cast<std::size_t>(rows * ld_out), kPoison));
  kernels::f32_to_16bit_matrix(din.as<float>(), ld_in, dout.as<uint16_t>(), ld_out, rows, cols, DType::f16, nullptr);
  const auto got = testing::to_host<uint16_t>(dout, static_cast<std::size_t>(rows * ld_out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < ld_out; ++c) {
      const uint16_t g = got[static_cast<std::size_t>(r * ld_out + c)];
      if (c >= cols) {
        ASSERT_EQ(g, kPoison) << "wrote outside the block at " << r << "," << c;
        continue;
      }
      const float x = in[static_cast<std::size_t>(r * ld_in + c)];
      if (std::isnan(x)) {
        ASSERT_TRUE(std::isnan(f16_to_f32(g)));
        continue;
      }
      ASSERT_EQ(g, f32_to_f16(x)) << "x=" << x;
      const double a = std::fabs(static_cast<double>(x));
      if (a <= 65504.0) {
        // Half a unit in the last place: 2^-11 relative for normals, 2^-25 absolute below.
        ASSERT_LE(std::fabs(static_cast<double>(f16_to_f32(g)) - static_cast<double>(x)),
                  std::max(std::ldexp(a, -11), std::ldexp(1.0, -25)))
            << "x=" << x;
      }
    }
  EXPECT_EQ(f16_to_f32(got[0]), 65504.0f);
  EXPECT_EQ(f16_to_f32(got[1]), 65504.0f);  // below max + half an ulp (65520)
  EXPECT_TRUE(std::isinf(f16_to_f32(got[2])));
  EXPECT_TRUE(std::isinf(f16_to_f32(got[3])) && f16_to_f32(got[3]) < 0);
  EXPECT_EQ(f16_to_f32(got[4]), 1.0f);                // tie to even
  EXPECT_EQ(f16_to_f32(got[5]), 1.0f + 0x1p-9f);      // tie to even, upward
  EXPECT_EQ(f16_to_f32(got[6]), 0.0f);                // 2^-25: half the smallest subnormal, ties to 0
}

}  // namespace
// A contiguous matrix takes the 4-values-per-thread path: every value equals the host
// conversion, and nothing past the matrix is written.
TEST(ConvertKernel, ContiguousF16MatrixMatchesTheHostConversion) {
  HETREC_REQUIRE_GPU();
  const int64_t rows = 301, cols = 64, n = rows * cols;
  Rng rng(123);
  std::vector<float> in(static_cast<std::size_t>(n));
  for (float& x : in) x = static_cast<float>(rng.normal() * std::exp2(-20.0 + 40.0 * rng.uniform()));
  gpu::DeviceBuffer din = testing::to_device(in);
  gpu::DeviceBuffer dout = testing::to_device(std::vector<uint16_t>(static_cast<std::size_t>(n + 8), kPoison));
  kernels::f32_to_16bit_matrix(din.as<float>(), cols, dout.as<uint16_t>(), cols, rows, cols, DType::f16, nullptr);
  const auto got = testing::to_host<uint16_t>(dout, static_cast<std::size_t>(n + 8));
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(got[static_cast<std::size_t>(i)], f32_to_f16(in[static_cast<std::size_t>(i)])) << "i=" << i;
  for (int64_t i = n; i < n + 8; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], kPoison) << "wrote past the end";
}

}  // namespace hetrec
