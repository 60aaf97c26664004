// The 16-bit ReLU mask pass (kernels/relu_mask.h) against a double-precision reference:
// dz kept where y > 0 and +0 elsewhere, for bf16 and fp16, on the vector path (rows of a
// multiple of eight values) and the element path, and nothing outside the block written.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "../gpu/device_test_support.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"
#include "kernels/relu_mask.h"

namespace hetrec {
namespace {

uint16_t to_bits(double v, DType t) {
  return t == DType::bf16 ? f32_to_bf16(static_cast<float>(v)) : f32_to_f16(static_cast<float>(v));
}
double from_bits(uint16_t b, DType t) { return t == DType::bf16 ? bf16_to_f32(b) : f16_to_f32(b); }

struct Shape {
  int64_t rows, cols, ld_dz, ld_y;
};

TEST(ReluMask16Bit, MatchesDoubleReference) {
  HETREC_REQUIRE_GPU();
  // Vector path (cols and both leading dimensions multiples of 8), then the element path.
  for (const Shape s : {Shape{1000, 64, 72, 64}, Shape{333, 40, 40, 48}, Shape{517, 37, 41, 39}, Shape{3, 5, 5, 5}}) {
    for (DType t : {DType::bf16, DType::f16}) {
      Rng rng(static_cast<uint64_t>(s.rows * 131 + s.cols));
      const uint16_t nan = t == DType::bf16 ? 0x7FC0 : 0x7E00;
      const uint16_t inf = t == DType::bf16 ? 0x7F80 : 0x7C00;
      // dz: random values, and NaN (the poison) in the columns past the block.
      std::vector<uint16_t> dz(static_cast<std::size_t>(s.rows * s.ld_dz), nan);
      std::vector<uint16_t> y(static_cast<std::size_t>(s.rows * s.ld_y), nan);
      for (int64_t r = 0; r < s.rows; ++r) {
        for (int64_t c = 0; c < s.cols; ++c) {
          dz[static_cast<std::size_t>(r * s.ld_dz + c)] = to_bits(rng.normal(), t);
          // y: mostly random signs, with the edge cases a ReLU output and its rounding produce.
          const uint64_t pick = rng.next_u64() % 16;
          uint16_t b = to_bits(rng.normal(), t);
          if (pick == 0) b = 0;                // +0: not positive
          if (pick == 1) b = 0x8000;           // -0
          if (pick == 2) b = 1;                // the smallest positive subnormal
          if (pick == 3) b = inf;              // +infinity: positive
          if (pick == 4) b = nan;              // NaN: not positive
          if (pick == 5) b = static_cast<uint16_t>(inf | 0x8000);  // -infinity
          y[static_cast<std::size_t>(r * s.ld_y + c)] = b;
        }
      }
      gpu::DeviceBuffer ddz = testing::to_device(dz), dy = testing::to_device(y);
      kernels::relu_mask_16bit(ddz.as<uint16_t>(), s.ld_dz, dy.as<uint16_t>(), s.ld_y, s.rows, s.cols, t, nullptr);
      const auto got = testing::to_host<uint16_t>(ddz, dz.size());
      for (int64_t r = 0; r < s.rows; ++r) {
        for (int64_t c = 0; c < s.ld_dz; ++c) {
          const std::size_t i = static_cast<std::size_t>(r * s.ld_dz + c);
          if (c >= s.cols) {
            ASSERT_EQ(got[i], nan) << "written outside the block at row " << r << " column " << c;
            continue;
          }
          const double yv = from_bits(y[static_cast<std::size_t>(r * s.ld_y + c)], t);
          const double want = yv > 0.0 ? from_bits(dz[i], t) : 0.0;
          const double g = from_bits(got[i], t);
          ASSERT_EQ(g, want) << dtype_name(t) << " row " << r << " column " << c << " y " << yv;
          if (!(yv > 0.0)) {
            ASSERT_EQ(got[i], 0) << "a masked value must be +0";
          }
        }
      }
    }
  }
}

TEST(ReluMask16Bit, RejectsOtherTypesAndShortLeadingDimensions) {
  HETREC_REQUIRE_GPU();
  gpu::DeviceBuffer a = testing::to_device(std::vector<uint16_t>(64, 1));
  EXPECT_THROW(kernels::relu_mask_16bit(a.as<uint16_t>(), 8, a.as<uint16_t>(), 8, 4, 8, DType::f32, nullptr),
               InternalError);
  EXPECT_THROW(kernels::relu_mask_16bit(a.as<uint16_t>(), 4, a.as<uint16_t>(), 8, 4, 8, DType::bf16, nullptr),
               InternalError);
}

}  // namespace
}  // namespace hetrec
