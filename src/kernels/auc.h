#pragma once
// Exact ROC AUC on the device, with ties handled as train/auc.h does (a tied positive and
// negative count one half: the Mann-Whitney U statistic over n_pos * n_neg). Sort-based:
// the (score, label) pairs are radix-sorted by score; each positive then finds its tie
// group [s, e) by binary search in the sorted scores and adds the negatives below the
// group plus half the negatives in it, 2U = sum (neg_before[s] + neg_before[e]), from a
// prefix count of the negatives. Every term is an integer summed in 64 bits, so the result
// does not depend on the order of the additions.
#include <cstddef>
#include <cstdint>

#include "gpu/platform.h"

namespace hetrec::kernels {

// Scratch bytes for n pairs.
std::size_t roc_auc_workspace_bytes(int64_t n);

// *auc (device memory) = the AUC of scores against labels (label > 0.5 is positive),
// NaN when all labels are one class. Scores compare as floats (-0 equals +0); NaN scores
// are not supported. n must be below 2^31.
void roc_auc(const float* scores, const float* labels, int64_t n, double* auc, void* workspace,
             std::size_t workspace_bytes, gpu::stream_t stream);

}  // namespace hetrec::kernels
