#pragma once
// AUC figures for the planted-teacher data: the Bayes-optimal AUC a perfect model could
// reach, and the plain AUC of scores against realised labels.
#include <cstdint>
#include <span>

#include "data/synthetic.h"

namespace hetrec::inline data {

// Expected AUC of the ideal scorer s_i = p_i when each label is drawn y_i ~ Bernoulli(p_i)
// independently. With q_j = 1 - p_j:
//
//            sum over i != j of p_i q_j ([p_i > p_j] + 1/2 [p_i == p_j])
//   AUC* =  -----------------------------------------------------------
//            sum over i != j of p_i q_j  =  (sum p_i)(sum q_j) - sum p_i q_i
//
// the expected number of correctly ordered (positive, negative) pairs over the expected
// number of such pairs (a ratio of expectations: it equals the expectation of the
// realised AUC up to O(1/n), since both counts concentrate). Computed exactly in
// O(n log n) by sorting: for each tie group of value v and size c, the pairs with the
// other member below contribute v * (sum of q below), the pairs inside the group
// c (c - 1) v (1 - v) / 2. Returns NaN when the denominator is 0 (all p in {0, 1} alike).
double expected_auc(std::span<const double> probabilities);

// AUC of `scores` against 0/1 `labels` (ties count 1/2), by sorting. NaN when one class
// is absent.
double auc(std::span<const double> scores, std::span<const float> labels);

// expected_auc of the teacher's probabilities over samples 0 .. samples-1 of the source's
// split: the AUC no model can beat on average on that data.
double bayes_optimal_auc(const SyntheticSource& source, int64_t samples);

// AUC of the teacher's probabilities against the labels actually drawn for samples
// 0 .. samples-1: what the ideal model scores on this particular eval set.
double realised_teacher_auc(const SyntheticSource& source, int64_t samples);

}  // namespace hetrec::data::data
