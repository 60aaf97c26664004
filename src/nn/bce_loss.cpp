#include "nn/bce_loss.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"

namespace hetrec::inline nn {
namespace {

// Samples per partial sum: the partition, and so the rounding of the total, depends
// only on n, never on the number of threads.
constexpr int64_t kChunk = 4096;

// 1 / (1 + exp(-x)) without overflow for either sign of x.
double sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

}  // namespace

template <class T>
double bce_with_logits(const T* logits, const T* labels, int64_t n, T* grad) {
  HETREC_CHECK(n > 0, "bce_with_logits over " + std::to_string(n) + " samples");
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(static_cast<std::size_t>(chunks));
  const double inv_n = 1.0 / static_cast<double>(n);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    double sum = 0.0;
    const int64_t end = std::min(n, (c + 1) * kChunk);
    for (int64_t i = c * kChunk; i < end; ++i) {
      const double x = logits[i];
      const double y = labels[i];
      sum += std::max(x, 0.0) - x * y + std::log1p(std::exp(-std::abs(x)));
      if (grad) grad[i] = static_cast<T>((sigmoid(x) - y) * inv_n);
    }
    partial[static_cast<std::size_t>(c)] = sum;
  }
  double total = 0.0;
  for (double s : partial) total += s;
  return total * inv_n;
}

template double bce_with_logits<float>(const float*, const float*, int64_t, float*);
template double bce_with_logits<double>(const double*, const double*, int64_t, double*);

}  // namespace hetrec::nn::nn
