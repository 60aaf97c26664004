#include "data/bayes_auc.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include "core/error.h"

namespace hetrec::inline data {

double expected_auc(std::span<const double> probabilities) {
  std::vector<double> p(probabilities.begin(), probabilities.end());
  std::sort(p.begin(), p.end());
  long double ordered = 0.0L;     // sum of p_i q_j over pairs with p_i > p_j, plus ties / 2
  long double q_below = 0.0L;     // sum of q over all values below the current group
  long double sum_p = 0.0L, sum_q = 0.0L, self = 0.0L;
  for (std::size_t begin = 0; begin < p.size();) {
    std::size_t end = begin;
    while (end < p.size() && p[end] == p[begin]) ++end;
    const long double v = p[begin];
    const auto c = static_cast<long double>(end - begin);
    ordered += c * v * q_below + 0.5L * c * (c - 1.0L) * v * (1.0L - v);
    q_below += c * (1.0L - v);
    sum_p += c * v;
    sum_q += c * (1.0L - v);
    self += c * v * (1.0L - v);
    begin = end;
  }
  const long double pairs = sum_p * sum_q - self;
  if (pairs <= 0.0L) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(ordered / pairs);
}

double auc(std::span<const double> scores, std::span<const float> labels) {
  HETREC_CHECK(scores.size() == labels.size(), "auc: one label per score");
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return scores[a] < scores[b]; });
  long double correct = 0.0L;
  long double negatives_below = 0.0L;
  long double positives = 0.0L, negatives = 0.0L;
  for (std::size_t begin = 0; begin < order.size();) {
    std::size_t end = begin;
    long double group_pos = 0.0L, group_neg = 0.0L;
    while (end < order.size() && scores[order[end]] == scores[order[begin]]) {
      (labels[order[end]] > 0.5f ? group_pos : group_neg) += 1.0L;
      ++end;
    }
    correct += group_pos * negatives_below + 0.5L * group_pos * group_neg;
    negatives_below += group_neg;
    positives += group_pos;
    negatives += group_neg;
    begin = end;
  }
  if (positives == 0.0L || negatives == 0.0L) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(correct / (positives * negatives));
}

double bayes_optimal_auc(const SyntheticSource& source, int64_t samples) {
  std::vector<double> p(static_cast<std::size_t>(samples));
  source.teacher_probabilities(0, samples, p.data());
  return expected_auc(p);
}

double realised_teacher_auc(const SyntheticSource& source, int64_t samples) {
  std::vector<double> p(static_cast<std::size_t>(samples));
  std::vector<float> labels(static_cast<std::size_t>(samples));
  source.teacher_probabilities(0, samples, p.data(), labels.data());
  return auc(p, labels);
}

}  // namespace hetrec::data::data
