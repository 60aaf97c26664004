#pragma once
// The state check of a training run (train/divergence.h applies it before every checkpoint
// write and at the end): every floating-point tensor of the model's state is finite, and
// every parameter (a tensor that is not an optimizer slot) lies within
// [-kParameterBound, kParameterBound]. A backend whose state lives in device memory checks
// it there (Model::state_violation), so a state of tens of gigabytes is not copied to the
// host for it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/named_tensor.h"

namespace hetrec::inline model {

// Parameters start at magnitudes of about 1 or less (the DLRM / TorchRec initialisations)
// and healthy training keeps them within a few units (the demo's largest magnitude at any
// of its checkpoints is 1.96); one weight of 1e4 moves a logit by 1e4 per unit of input,
// past any meaningful prediction. fp16 rows (max 65504) can still hold it, so the check
// sees the value rather than an overflow.
inline constexpr double kParameterBound = 1e4;

// The state tensors named as an optimizer's slots: "<param>.sum" (Adagrad),
// "<param>.exp_avg" / ".exp_avg_sq" (Adam), "embedding.<table>.accumulator" (sparse
// Adagrad); the naming of model/dlrm.h. They must be finite but may grow large (an
// Adagrad sum grows with every step). Every other floating-point tensor is a parameter.
bool is_optimizer_slot(const std::string& tensor_name);

// The first element of a state that fails the check above.
struct StateViolation {
  std::string tensor;
  int64_t index = 0;   // flat element index within the tensor
  double value = 0.0;  // NaN, +-inf, or a finite parameter beyond kParameterBound
  bool parameter = true;
  // "parameter 'bottom_mlp.0.weight' element 12 is 3.2e+05, beyond +-1e+04" or
  // "optimizer slot 'top_mlp.1.bias.sum' element 0 is NaN".
  std::string describe() const;
};

// Checks every floating-point tensor of `state` (host tensors: fp32, fp64, fp16, bf16;
// integer tensors such as "step" are not checked). nullopt when the state is sound.
std::optional<StateViolation> find_state_violation(const std::vector<NamedTensor>& state);

// The text of a number in messages: "%.6g", with "NaN", "inf" and "-inf".
std::string value_text(double value);

}  // namespace hetrec::model::model
