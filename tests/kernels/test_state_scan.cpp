// The device state check (kernels/state_scan.h) against a double-precision reference on
// random arrays of every stored float type: the first element that is NaN, infinite or
// beyond the bound, wherever the planted values fall, and n for a clean array.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "../gpu/device_test_support.h"
#include "core/dtype.h"
#include "core/rng.h"
#include "kernels/state_scan.h"

namespace hetrec {
namespace {

// The reference: the lowest index whose value (as a double) is non-finite or beyond bound.
int64_t reference_first(const std::vector<uint8_t>& bytes, DType t, int64_t n, double bound) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = load_as_f32(bytes.data(), static_cast<std::size_t>(i), t);
    if (!std::isfinite(v) || std::fabs(v) > bound) return i;
  }
  return n;
}

int64_t run_scan(const std::vector<uint8_t>& bytes, DType t, int64_t n, float bound) {
  gpu::DeviceBuffer x = testing::to_device(bytes);
  gpu::DeviceBuffer first = testing::to_device(std::vector<int64_t>{-12345});  // poisoned
  kernels::find_first_out_of_bound(t, x.get(), n, bound, first.as<int64_t>(), nullptr);
  return testing::to_host<int64_t>(first, 1)[0];
}

TEST(StateScan, FindsTheFirstPlantedValueOfEveryKindAndType) {
  HETREC_REQUIRE_GPU();
  Rng rng(20261205);
  const float bad_values[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), 2.5e4f, -1.5e4f};
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    for (int trial = 0; trial < 12; ++trial) {
      // Sizes across one block, many blocks and more than the grid covers in one stride.
      const int64_t n = trial < 4 ? 1 + static_cast<int64_t>(rng.below(300))
                                  : 1000 + static_cast<int64_t>(rng.below(3'000'000));
      std::vector<uint8_t> bytes(static_cast<std::size_t>(n) * dtype_size(t));
      // Healthy values up to about 100 in magnitude (a trained parameter stays within a few units).
      for (int64_t i = 0; i < n; ++i)
        store_from_f32(bytes.data(), static_cast<std::size_t>(i), t, static_cast<float>(rng.normal() * 30.0));
      const double bound = 1e4;
      ASSERT_EQ(run_scan(bytes, t, n, 1e4f), n) << dtype_name(t) << " clean, n " << n;
      // One to four planted values at random places; the lowest must be found.
      const int planted = 1 + static_cast<int>(rng.below(4));
      for (int k = 0; k < planted; ++k) {
        const auto i = static_cast<std::size_t>(rng.below(static_cast<uint64_t>(n)));
        store_from_f32(bytes.data(), i, t, bad_values[rng.below(5)]);
      }
      const int64_t want = reference_first(bytes, t, n, bound);
      ASSERT_LT(want, n);
      EXPECT_EQ(run_scan(bytes, t, n, 1e4f), want) << dtype_name(t) << " n " << n << " trial " << trial;
      // Without a bound (an optimizer slot) only the non-finite values count.
      const double inf = std::numeric_limits<double>::infinity();
      EXPECT_EQ(run_scan(bytes, t, n, std::numeric_limits<float>::infinity()), reference_first(bytes, t, n, inf))
          << dtype_name(t) << " unbounded, n " << n;
    }
  }
}

TEST(StateScan, EmptyArrayReportsZero) {
  HETREC_REQUIRE_GPU();
  gpu::DeviceBuffer first = testing::to_device(std::vector<int64_t>{-12345});
  kernels::find_first_out_of_bound(DType::f32, nullptr, 0, 1e4f, first.as<int64_t>(), nullptr);
  EXPECT_EQ(testing::to_host<int64_t>(first, 1)[0], 0);
}

}  // namespace
}  // namespace hetrec
