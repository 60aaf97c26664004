#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace hetrec::inline optim {

double lr_schedule_scale(const OptimConfig& optim, int64_t step) {
  HETREC_CHECK(step >= 0, "learning-rate schedule queried at step " + std::to_string(step));
  if (optim.warmup_steps > 0 && step < optim.warmup_steps)
    return static_cast<double>(step + 1) / static_cast<double>(optim.warmup_steps);
  if (optim.decay_start > 0 && optim.decay_steps > 0 && step >= optim.decay_start) {
    const double remaining = static_cast<double>(optim.decay_start + optim.decay_steps - step);
    const double fraction = std::max(0.0, remaining / static_cast<double>(optim.decay_steps));
    return std::pow(fraction, optim.decay_power);
  }
  return 1.0;
}

StepRates scheduled_rates(const OptimConfig& optim, int64_t step) {
  const double scale = lr_schedule_scale(optim, step);
  StepRates rates;
  rates.dense_lr = static_cast<float>(optim.lr * scale);
  rates.sparse_lr = static_cast<float>(optim.sparse_lr * scale);
  return rates;
}

}  // namespace hetrec::optim::optim
