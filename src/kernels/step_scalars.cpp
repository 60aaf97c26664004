#include "kernels/step_scalars.h"

#include <cmath>

namespace hetrec::kernels {

StepScalars make_step_scalars(double sparse_lr, double dense_lr, double beta1, double beta2, int64_t step) {
  StepScalars s;
  s.sparse_lr = static_cast<float>(sparse_lr);
  s.dense_neg_lr = static_cast<float>(-dense_lr);
  const double t = static_cast<double>(step + 1);
  const double bias_correction1 = 1.0 - std::pow(beta1, t);
  const double bias_correction2 = 1.0 - std::pow(beta2, t);
  s.adam_neg_step_size = static_cast<float>(-(dense_lr / bias_correction1));
  s.adam_bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  s.step = step;
  s.skip_update = 0;
  return s;
}

}  // namespace hetrec::kernels
