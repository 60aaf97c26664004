#pragma once
// Exact Zipf draws over ranks 0..n-1 with P(rank r) proportional to (r + 1)^-s, by
// rejection-inversion (Hoermann and Derflinger 1996, "Rejection-inversion to generate
// variates from monotone discrete distributions"): O(1) expected time per draw and O(1)
// memory, so 40M-row tables cost nothing to set up.
#include <cstdint>

#include "core/rng.h"

namespace hetrec::inline data {

class ZipfSampler {
 public:
  // n >= 1 ranks; exponent s >= 0 (0 is the uniform law). Throws ConfigError otherwise.
  ZipfSampler(int64_t n, double exponent);

  int64_t size() const { return n_; }
  double exponent() const { return s_; }
  // One rank in [0, n). Consumes a small, variable number of draws from `rng` (one
  // per trial; most trials are accepted).
  int64_t operator()(Rng& rng) const;

 private:
  // The hat: h(x) = x^-s on ranks 1..n, its integral H (with H(1) = 0) and H's inverse.
  double hat(double x) const;
  double hat_integral(double x) const;
  double hat_integral_inverse(double y) const;

  int64_t n_;
  double s_;
  double lower_ = 0.0;  // H(1.5) - h(1): rank 1 owns [lower_, H(1.5)] entirely
  double upper_ = 0.0;  // H(n + 0.5)
  // Quick acceptance: for every rank k >= 2 the points x in [k - quick_, k + 1/2] lie in
  // the accepted part of k's interval (the rejected part is widest at k = 2), which
  // spares most trials the evaluation of H(k + 1/2) - h(k).
  double quick_ = 0.0;
};

}  // namespace hetrec::data::data
