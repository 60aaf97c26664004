#pragma once
// When a training run has diverged. The trainer applies two checks:
//
//   every step            the batch's mean loss is finite and at most kLossBound;
//   before every          every floating-point tensor of the model's state is finite, and
//   checkpoint write      every parameter (a tensor that is not an optimizer slot) lies
//   and at the end        within [-kParameterBound, kParameterBound].
//
// A run that fails either stops with a NumericError (exit code 5) that names the step and
// the offending value, and no checkpoint is ever written from a state that fails the
// second check. Healthy runs stay far inside both bounds (docs/reliability.md gives the
// figures measured on the bundled configs).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/named_tensor.h"

namespace hetrec {

// The binary cross-entropy of predicting 1/2 for every sample, ln 2 nats: where a freshly
// initialised model starts (its logits start near zero) and what training only lowers.
inline constexpr double kConstantPredictorLoss = 0.69314718055994530942;
// A mean batch loss this many times the constant predictor's means the logits are wrong
// by about 69 on average, e^-69 confident in the wrong label: no healthy run gets there
// (the demo's largest batch loss, at step 11, is 0.73).
inline constexpr double kLossBoundFactor = 100.0;
inline constexpr double kLossBound = kLossBoundFactor * kConstantPredictorLoss;

// Parameters start at magnitudes of about 1 or less (the DLRM / TorchRec initialisations)
// and healthy training keeps them within a few units (the demo's largest magnitude at any
// of its checkpoints is 1.96); one weight of 1e4 moves a logit by 1e4 per unit of input,
// past any meaningful prediction. fp16 rows (max 65504) can still hold it, so the check
// sees the value rather than an overflow.
inline constexpr double kParameterBound = 1e4;

// True when the loss of one step is out of bounds (non-finite or above kLossBound).
bool loss_diverged(double loss);

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

}  // namespace hetrec
