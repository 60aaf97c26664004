#pragma once
// The sparse optimizers' update rules for one embedding row. The fused embedding backward
// first sums the gradient contributions of every occurrence of a row in the batch, then
// applies one of these once per unique row. All arithmetic is fp32 on an fp32 copy of the
// row (16-bit rows are widened before and rounded after by the caller). Each rule is a
// plain loop in a fixed order, so a device kernel can mirror it operation for operation.
#include <math.h>  // sqrtf: the same spelling compiles for host and device code

#if defined(__CUDACC__) || defined(__HIPCC__)
#define HETREC_ROW_UPDATE __host__ __device__ inline
#else
#define HETREC_ROW_UPDATE inline
#endif

namespace hetrec::inline optim {

// SGD: w -= lr * g.
HETREC_ROW_UPDATE void sgd_row_update(float* w, const float* g, int dim, float lr) {
  for (int d = 0; d < dim; ++d) w[d] -= lr * g[d];
}

// Adagrad, one accumulator per element, as torch.optim.Adagrad (lr_decay 0, weight_decay
// 0): acc += g^2; w -= (lr * g) / (sqrt(acc) + eps). The accumulator starts at
// initial_accumulator_value (set by the owner of the state).
HETREC_ROW_UPDATE void adagrad_row_update(float* w, float* acc, const float* g, int dim, float lr, float eps) {
  for (int d = 0; d < dim; ++d) {
    acc[d] += g[d] * g[d];
    w[d] -= (lr * g[d]) / (sqrtf(acc[d]) + eps);
  }
}

// Row-wise Adagrad, one accumulator per row, as FBGEMM's EXACT_ROWWISE_ADAGRAD:
// acc += mean_d(g^2); w -= (lr / (sqrt(acc) + eps)) * g. The mean sums g^2 in element
// order, then divides by dim.
// The update once mean_d(g^2) is known: for a row split by columns over ranks, the
// squares are summed per block and the sums added over the ranks first.
HETREC_ROW_UPDATE void rowwise_adagrad_apply(float* w, float* acc, const float* g, int dim, float lr, float eps,
                                             float mean_sq) {
  *acc += mean_sq;
  const float multiplier = lr / (sqrtf(*acc) + eps);
  for (int d = 0; d < dim; ++d) w[d] -= multiplier * g[d];
}
HETREC_ROW_UPDATE void rowwise_adagrad_row_update(float* w, float* acc, const float* g, int dim, float lr,
                                                  float eps) {
  float sum_sq = 0.0f;
  for (int d = 0; d < dim; ++d) sum_sq += g[d] * g[d];
  rowwise_adagrad_apply(w, acc, g, dim, lr, eps, sum_sq / static_cast<float>(dim));
}

}  // namespace hetrec::optim::optim

// ---- Host-side helpers shared by every backend's fused embedding backward ----
#if !defined(__CUDACC__) && !defined(__HIPCC__)
#include <cstdint>

#include "optim/optim_config.h"

namespace hetrec::inline optim {

// Throws ConfigError naming `optim.sparse` unless `kind` is sgd, adagrad or rowwise_adagrad.
void check_sparse_optimizer(OptimizerKind kind);

// fp32 optimizer-state elements one row of width `dim` carries: SGD 0, Adagrad dim,
// row-wise Adagrad 1 (also what the planner's memory model counts).
int64_t sparse_state_per_row(OptimizerKind kind, int dim);

}  // namespace hetrec::optim::optim
#endif
