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

#include "model/state_check.h"

namespace hetrec::inline train {

// The binary cross-entropy of predicting 1/2 for every sample, ln 2 nats: where a freshly
// initialised model starts (its logits start near zero) and what training only lowers.
inline constexpr double kConstantPredictorLoss = 0.69314718055994530942;
// A mean batch loss this many times the constant predictor's means the logits are wrong
// by about 69 on average, e^-69 confident in the wrong label: no healthy run gets there
// (the demo's largest batch loss, at step 11, is 0.73).
inline constexpr double kLossBoundFactor = 100.0;
inline constexpr double kLossBound = kLossBoundFactor * kConstantPredictorLoss;

// True when the loss of one step is out of bounds (non-finite or above kLossBound).
bool loss_diverged(double loss);

}  // namespace hetrec::train::train
