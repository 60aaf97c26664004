#pragma once
// Dynamic loss scaling for fp16 dense compute, entirely on the device (inside the step's
// graph, no host synchronisation): the loss gradient is multiplied by the scale
// (kernels/bce_loss.h), every gradient the updates read is multiplied back by its inverse
// and checked for infinities and NaN, and an overflow raises the update kernels' skip
// flag, so no parameter, row or optimizer state changes in that step. The scale then
// halves; after `growth_interval` steps without overflow it doubles (the rule of
// torch.cuda.amp.GradScaler).
#include <cstdint>

#include "gpu/platform.h"
#include "kernels/loss_scale_state.h"  // LossScaleState

namespace hetrec::kernels {

struct LossScaleRule {
  int32_t growth_interval = 2000;  // torch.cuda.amp.GradScaler's default
  float growth = 2.0f;             // GradScaler's growth_factor
  float backoff = 0.5f;            // GradScaler's backoff_factor
  // Bounds of the scale (GradScaler has none): 2^24 keeps scaled fp32 gradients far from
  // fp32 overflow; 2^-24 keeps the inverse finite.
  float max_scale = 16777216.0f;
  float min_scale = 5.9604645e-08f;
};

// g[r * ld + c] *= state->inv_scale for r < rows, c < cols; a non-finite result sets
// state->overflow and *skip to 1 (other elements are still unscaled).
void unscale_and_check(float* g, int64_t rows, int64_t cols, int64_t ld, LossScaleState* state, int32_t* skip,
                       gpu::stream_t stream);

// One thread: on overflow scale *= backoff and clean_steps = 0; otherwise ++clean_steps,
// and at growth_interval scale *= growth and clean_steps = 0; inv_scale = 1 / scale.
// The scale stays within [min_scale, max_scale].
void update_loss_scale(LossScaleState* state, const LossScaleRule& rule, gpu::stream_t stream);

}  // namespace hetrec::kernels
