#pragma once
// The device state of dynamic loss scaling (kernels/loss_scale.h). Plain C++, so that the
// planner (plan/memory_model.cpp) counts it with its real size.
#include <cstdint>

namespace hetrec::kernels {

// Device memory, persistent across steps.
struct LossScaleState {
  float scale = 1.0f;
  float inv_scale = 1.0f;
  int32_t clean_steps = 0;  // steps since the last overflow or growth
  int32_t overflow = 0;     // this step's gradients held a non-finite value (cleared by the step)
};

}  // namespace hetrec::kernels
