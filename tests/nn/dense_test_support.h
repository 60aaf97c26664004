#pragma once
// Helpers of the dense-layer tests: random fills, NaN poisoning and a central-difference
// gradient check in double precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/rng.h"

namespace hetrec::testing {

// Values uniform in [-scale, scale), never all zero.
template <class T>
std::vector<T> random_vector(int64_t n, uint64_t seed, double scale = 1.0) {
  Rng rng(seed, 7);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (T& x : v) x = static_cast<T>(scale * (2.0 * rng.uniform() - 1.0));
  return v;
}

template <class T>
void fill_random(T* p, int64_t n, uint64_t seed, double scale = 1.0) {
  const auto v = random_vector<T>(n, seed, scale);
  std::copy(v.begin(), v.end(), p);
}

template <class T>
std::vector<T> poisoned(int64_t n) {
  return std::vector<T>(static_cast<std::size_t>(n), std::numeric_limits<T>::quiet_NaN());
}

// Step and tolerance of the gradient checks: with h = 1e-5 the truncation error of a
// central difference (h^2 / 6 f''') and its rounding error (1e-16 |L| / h) both stay
// near 1e-10 for the small, O(1)-valued problems of these tests.
inline constexpr double kFiniteDifferenceStep = 1e-5;
inline constexpr double kGradientTolerance = 1e-6;
// Relative errors are taken against max(|analytic|, |numeric|, kGradientFloor), so that
// gradients that are nearly zero are compared absolutely.
inline constexpr double kGradientFloor = 1e-2;

// Compares analytic[i] with the central difference of loss() in values[i] for every i
// (values is perturbed and restored in place). Returns the largest relative error.
template <class Loss>
double check_gradient(const std::string& what, double* values, const double* analytic, int64_t n, Loss&& loss) {
  double worst = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double saved = values[i];
    values[i] = saved + kFiniteDifferenceStep;
    const double up = loss();
    values[i] = saved - kFiniteDifferenceStep;
    const double down = loss();
    values[i] = saved;
    const double numeric = (up - down) / (2.0 * kFiniteDifferenceStep);
    const double scale = std::max({std::abs(analytic[i]), std::abs(numeric), kGradientFloor});
    const double err = std::abs(analytic[i] - numeric) / scale;
    worst = std::max(worst, err);
    EXPECT_LT(err, kGradientTolerance) << what << "[" << i << "]: analytic " << analytic[i] << ", numeric "
                                       << numeric;
  }
  return worst;
}

// sum_i out[i] * weights[i]: a scalar loss whose gradient w.r.t. out is `weights`.
inline double weighted_sum(const double* out, const std::vector<double>& weights) {
  double s = 0.0;
  for (std::size_t i = 0; i < weights.size(); ++i) s += out[i] * weights[i];
  return s;
}

}  // namespace hetrec::testing
