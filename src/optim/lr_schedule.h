#pragma once
// The MLPerf DLRM learning-rate schedule (linear warm-up, constant, polynomial decay):
// the multiplier, and the dense and sparse rates it gives at a step.
#include <cstdint>

#include "optim/optim_config.h"

namespace hetrec::inline optim {

// Multiplier of the base rates at `step` (0-based: the number of optimizer steps already
// taken before this one). With W = warmup_steps, D = decay_start, N = decay_steps and
// p = decay_power:
//   step < W:                  (step + 1) / W
//   D > 0, N > 0, step >= D:   max(0, (D + N - step) / N)^p   (exactly 0 from D + N on)
//   otherwise:                 1
// Warm-up takes precedence where the two ranges overlap (as in the reference).
//
// Relation to the MLPerf reference (dlrm_s_pytorch.py, LRPolicyScheduler): its scheduler
// has already been stepped once by the time the first update runs, so its step count is
// ours + 1 and its warm-up factor 1 - (W - count) / W equals (step + 1) / W above: the
// warm-up values are identical. Where we deliberately differ: the reference, when decay
// is configured, holds the last warm-up value ((W - 1) / W) until the decay starts instead
// of the base rate; it starts the decay one step earlier (count >= D, i.e. step >= D - 1),
// fixes the power at 2, floors the rate at 1e-7 and then freezes at its last value instead
// of reaching 0.
double lr_schedule_scale(const OptimConfig& optim, int64_t step);

// Learning rates at `step` (0-based): the base rates times lr_schedule_scale.
StepRates scheduled_rates(const OptimConfig& optim, int64_t step);

}  // namespace hetrec::optim::optim
