#include "data/zipf.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace hetrec::inline data {
namespace {

// Below this magnitude the series expansions are used: log1p(t)/t and expm1(t)/t lose
// all precision as t -> 0 (the s -> 1 limit), their Taylor series do not.
constexpr double kSeriesThreshold = 1e-8;

// log1p(t) / t, continuous at t = 0.
double log1p_over(double t) {
  if (std::abs(t) > kSeriesThreshold) return std::log1p(t) / t;
  return 1.0 - t * (0.5 - t * (1.0 / 3.0 - 0.25 * t));
}

// expm1(t) / t, continuous at t = 0.
double expm1_over(double t) {
  if (std::abs(t) > kSeriesThreshold) return std::expm1(t) / t;
  return 1.0 + t * 0.5 * (1.0 + t / 3.0 * (1.0 + 0.25 * t));
}

}  // namespace

ZipfSampler::ZipfSampler(int64_t n, double exponent) : n_(n), s_(exponent) {
  if (n < 1) throw ConfigError("Zipf sampler: expected at least 1 rank, got " + std::to_string(n));
  if (!(exponent >= 0.0) || !std::isfinite(exponent))
    throw ConfigError("Zipf exponent: expected a finite value >= 0, got " + std::to_string(exponent));
  lower_ = hat_integral(1.5) - 1.0;
  upper_ = hat_integral(static_cast<double>(n) + 0.5);
  quick_ = 2.0 - hat_integral_inverse(hat_integral(2.5) - hat(2.0));
}

double ZipfSampler::hat(double x) const { return std::exp(-s_ * std::log(x)); }

// H(x) = (x^(1-s) - 1) / (1 - s), and log(x) at s = 1.
double ZipfSampler::hat_integral(double x) const {
  const double log_x = std::log(x);
  return expm1_over((1.0 - s_) * log_x) * log_x;
}

double ZipfSampler::hat_integral_inverse(double y) const {
  double t = y * (1.0 - s_);
  if (t < -1.0) t = -1.0;  // only reachable through rounding at the ends of the range
  return std::exp(log1p_over(t) * y);
}

int64_t ZipfSampler::operator()(Rng& rng) const {
  if (n_ == 1) return 0;
  if (s_ == 0.0) return static_cast<int64_t>(rng.below(static_cast<uint64_t>(n_)));
  // Draw u uniformly under the hat's integral and invert it to a point x; rank k is the
  // integer nearest x. Rank k owns [H(k - 1/2), H(k + 1/2)], an interval at least h(k)
  // long because h is convex; accepting only its top h(k) makes P(k) proportional to h(k).
  for (;;) {
    const double u = upper_ + rng.uniform() * (lower_ - upper_);
    const double x = hat_integral_inverse(u);
    int64_t k = static_cast<int64_t>(x + 0.5);
    if (k < 1) k = 1;
    if (k > n_) k = n_;
    const double kd = static_cast<double>(k);
    if (kd - x <= quick_ || u >= hat_integral(kd + 0.5) - hat(kd)) return k - 1;
  }
}

}  // namespace hetrec::data::data
