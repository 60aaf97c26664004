#include "train/auc.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/error.h"

namespace hetrec::inline train {

double roc_auc(std::span<const float> scores, std::span<const float> labels) {
  if (scores.size() != labels.size()) throw InternalError("roc_auc: scores and labels differ in length");
  const std::size_t n = scores.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return scores[a] < scores[b]; });
  // Sum of the (average, 1-based) ranks of the positives; tied scores share their mean rank.
  double rank_sum_pos = 0.0;
  double n_pos = 0.0;
  std::size_t i = 0;
  while (i < n) {
    std::size_t j = i;
    double pos_in_group = 0.0;
    while (j < n && scores[order[j]] == scores[order[i]]) {
      pos_in_group += labels[order[j]] > 0.5f ? 1.0 : 0.0;
      ++j;
    }
    const double mean_rank = 0.5 * (static_cast<double>(i + 1) + static_cast<double>(j));
    rank_sum_pos += pos_in_group * mean_rank;
    n_pos += pos_in_group;
    i = j;
  }
  const double n_neg = static_cast<double>(n) - n_pos;
  if (n_pos == 0.0 || n_neg == 0.0) return std::numeric_limits<double>::quiet_NaN();
  return (rank_sum_pos - n_pos * (n_pos + 1.0) / 2.0) / (n_pos * n_neg);
}

double log_loss_from_logits(std::span<const float> logits, std::span<const float> labels) {
  if (logits.size() != labels.size()) throw InternalError("log_loss: logits and labels differ in length");
  double sum = 0.0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const double z = logits[i], y = labels[i];
    // max(z, 0) - z*y + log(1 + exp(-|z|))
    sum += std::max(z, 0.0) - z * y + std::log1p(std::exp(-std::fabs(z)));
  }
  return logits.empty() ? 0.0 : sum / static_cast<double>(logits.size());
}

}  // namespace hetrec::train::train
