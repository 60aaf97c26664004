#pragma once
// Evaluation metrics over a whole evaluation set.
#include <cstdint>
#include <span>

namespace hetrec::inline train {

// Exact ROC AUC: the probability that a random positive scores above a random negative,
// ties counting one half (the Mann-Whitney U statistic over n_pos * n_neg). O(n log n).
// Returns NaN when the labels are all one class.
double roc_auc(std::span<const float> scores, std::span<const float> labels);

// Mean binary cross-entropy of logits against labels (numerically stable form).
double log_loss_from_logits(std::span<const float> logits, std::span<const float> labels);

}  // namespace hetrec::train::train
